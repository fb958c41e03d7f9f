package webhooks

import "github.com/redis/go-redis/v9"

// claimScript claims the (webhook_id, event_id) pairs of one event and, for every pair it wins, creates
// the delivery record, its schedule entry (the lease of the first attempt, so a crash during that attempt
// is recovered by a worker) and its index entry, all in one atomic step. Every claim is checked before
// the first write. All keys share the event's shard tag.
//
// KEYS[1] -> {P:s}:evt:<event_id>      the request body, stored once per event
// KEYS[2] -> {P:s}:sched
// KEYS[3i], KEYS[3i+1], KEYS[3i+2] (i = 1..n) -> target i's claim key, delivery key, index key
// ARGV[1] -> now (ms)
// ARGV[2] -> retention (ms): the expiry of the claim, the record and the index entry
// ARGV[3] -> lease end of the first attempt (ms)
// ARGV[4] -> request body
// ARGV[5] -> event id
// ARGV[6] -> event type
// ARGV[4+3i], ARGV[5+3i], ARGV[6+3i] (i = 1..n) -> target i's webhook id, delivery id, lease token
// returns {body stored earlier or false, reply_1, ..., reply_n}: reply_i is {1, delivery id} when this
// call created the delivery, or {0, delivery id, field, value, ...} with the existing record's fields
// (no fields if the record is gone).
var claimScript = redis.NewScript(`
local now, retention, leaseEnd = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local n = (#KEYS - 2) / 3
local owners = {}
local fresh = 0
for i = 1, n do
  owners[i] = redis.call('GET', KEYS[3 * i])
  if not owners[i] then fresh = fresh + 1 end
end
local reply = {false}
if fresh > 0 then
  local stored = redis.call('GET', KEYS[1])
  if stored then
    reply[1] = stored
    if redis.call('PTTL', KEYS[1]) < retention then redis.call('PEXPIRE', KEYS[1], retention) end
  else
    redis.call('SET', KEYS[1], ARGV[4], 'PX', retention)
  end
end
local expiry = now + retention
for i = 1, n do
  local claim, dlv, idx = KEYS[3 * i], KEYS[3 * i + 1], KEYS[3 * i + 2]
  local wid, id, token = ARGV[4 + 3 * i], ARGV[5 + 3 * i], ARGV[6 + 3 * i]
  if owners[i] then
    local r = {0, owners[i]}
    for _, v in ipairs(redis.call('HGETALL', dlv)) do r[#r + 1] = v end
    reply[#reply + 1] = r
  else
    redis.call('SET', claim, id, 'NX', 'PX', retention)
    redis.call('HSET', dlv, 'w', wid, 'e', ARGV[5], 't', ARGV[6], 's', 'pending', 'n', 0, 'r', 0,
      'next', leaseEnd, 'c', now, 'u', now, 'x', expiry, 'l', token)
    redis.call('PEXPIRE', dlv, retention)
    redis.call('ZADD', KEYS[2], leaseEnd, id)
    redis.call('ZREMRANGEBYSCORE', idx, '-inf', now)
    redis.call('ZADD', idx, expiry, id)
    if redis.call('PTTL', idx) < retention then redis.call('PEXPIRE', idx, retention) end
    reply[#reply + 1] = {1, id}
  end
end
return reply
`)
