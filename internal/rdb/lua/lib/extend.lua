-- lib/extend.lua is extend(key, ttl, slack): sets key's TTL to ttl + slack (ms) when it is shorter than ttl,
-- so most writes leave a TTL as it is.
local function extend(key, ttl, slack)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl + slack) end
end
