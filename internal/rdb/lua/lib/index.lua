-- lib/index.lua is the Lua function that adds a delivery to a webhook's per-shard index, a stream:
-- index(key, now, retention, hash, expiry, ext) appends {d = hash, x = expiry (the record's, ms)} under
-- the id <now>-<seq>, or after the stream's newest entry when that is later (another replica's clock
-- is ahead: stream ids only grow), trims entries older than a retention (their records have expired,
-- or were redelivered and indexed again), and keeps the key at least as long as its newest entry. A
-- stream this call creates (NOMKSTREAM tells) gets a TTL of a retention and 1/64 more at once, whatever
-- the caller remembers: a key that expired or was evicted is never re-created without one. On an
-- existing stream, with ext false (the caller set its TTL within the last 1/64 of a retention:
-- indexTTLs) it leaves the TTL as it is; else, when the TTL is shorter than a retention, it extends it
-- to a retention and 1/64 more (extend, lib/extend.lua). It returns the entry's id, and raises an error, having written nothing, when key holds
-- something other than a stream or Redis is older than 7.0 (no <ms>-* ids).
--#include extend
local function index(key, now, retention, hash, expiry, ext)
  local minid, slack = now - retention, math.floor(retention / 64)
  local id = redis.pcall('XADD', key, 'NOMKSTREAM', 'MINID', '~', minid, now .. '-*', 'd', hash, 'x', expiry)
  if not id then
    id = redis.call('XADD', key, 'MINID', '~', minid, now .. '-*', 'd', hash, 'x', expiry)
    redis.call('PEXPIRE', key, retention + slack)
    return id
  end
  if type(id) == 'table' then
    local top = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
    if not top then error('webhooks: cannot append to ' .. key .. ': ' .. tostring(id.err)) end
    id = redis.call('XADD', key, 'MINID', '~', minid, string.match(top[1], '^%d+') .. '-*', 'd', hash, 'x', expiry)
  end
  if ext then extend(key, retention, slack) end
  return id
end
--#include store_event
