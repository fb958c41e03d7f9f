-- lib/count_hour.lua is countHour(key, now, outcome, n): counts n deliveries at now (ms) in the hash at key,
-- under outcome 's' (successful attempts), 'f' (failed ones) or 'k' (skipped by a transformation, not
-- attempted); it returns true when it created the hour's counter (the first count of its hour).
local function countHour(key, now, outcome, n)
  local hour = math.floor(now / 3600000)
  if redis.call('HINCRBY', key, outcome .. string.format('%d', hour), n) == n then
    for _, f in ipairs(redis.call('HKEYS', key)) do
      local h = tonumber(string.sub(f, 2))
      if f ~= 'ok' and (not h or h <= hour - {{HourlySlots}}) then redis.call('HDEL', key, f) end
    end
    redis.call('PEXPIRE', key, {{HourlyTTLMs}})
    return true
  end
  return false
end
