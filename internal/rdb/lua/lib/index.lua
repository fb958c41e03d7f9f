-- lib/index.lua is the Lua function that adds a delivery to a webhook's per-shard index, a stream:
-- index(key, now, retention, hash, expiry, ext) appends {d = hash, x = expiry (the record's, ms)} under
-- the id <now>-<seq>, or after the stream's newest entry when that is later (another replica's clock
-- is ahead: stream ids only grow), trims entries older than a retention (their records have expired,
-- or were redelivered and indexed again), and keeps the key at least as long as its newest entry: with
-- ext false (the caller knows it set the TTL within the last 1/64 of a retention: indexTTLs) it leaves
-- the TTL as it is; else, when the TTL is shorter than a retention, it sets it to a retention and 1/64
-- more (extend, lib/extend.lua). It returns the entry's id, and raises an error, having written nothing, when key holds
-- something other than a stream or Redis is older than 7.0 (no <ms>-* ids).
--#include extend
local function index(key, now, retention, hash, expiry, ext)
  local minid = now - retention
  local id = redis.pcall('XADD', key, 'MINID', '~', minid, now .. '-*', 'd', hash, 'x', expiry)
  if type(id) == 'table' then
    local top = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
    if not top then error('webhooks: cannot append to ' .. key .. ': ' .. tostring(id.err)) end
    id = redis.call('XADD', key, 'MINID', '~', minid, string.match(top[1], '^%d+') .. '-*', 'd', hash, 'x', expiry)
  end
  if ext then extend(key, retention, math.floor(retention / 64)) end
  return id
end
--#include store_event
