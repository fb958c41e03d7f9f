-- lib/count_hour.lua is countHour(key, now, ok, n): counts n attempts at now (ms), successful or not, in the
-- hash at key.
local function countHour(key, now, ok, n)
  local hour = math.floor(now / 3600000)
  if redis.call('HINCRBY', key, (ok and 's' or 'f') .. string.format('%d', hour), n) == n then
    for _, f in ipairs(redis.call('HKEYS', key)) do
      local h = tonumber(string.sub(f, 2))
      if not h or h <= hour - {{HourlySlots}} then redis.call('HDEL', key, f) end
    end
    redis.call('PEXPIRE', key, {{HourlyTTLMs}})
  end
end
