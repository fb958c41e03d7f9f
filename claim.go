package webhooks

import "github.com/redis/go-redis/v9"

// claimScript claims the (webhook_id, event_id) pairs of one event and, for every pair it wins, creates
// the delivery record, its schedule entry (the lease of the first attempt, so a crash during that attempt
// is recovered by a worker) and its index entry, all in one atomic step. Every claim is checked before
// the first write: a pair is claimed when its claim key exists (its record, created with it and
// expiring with it, is read first, since a duplicate returns it). All keys share the event's shard tag. A pair whose record carries this call's own
// lease token, unattempted, was created by this very call whose reply was lost: it is reported as
// created again, so the caller can retry the script safely.
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
// returns {body stored earlier or false, reply_1, ..., reply_n}: reply_i is {1} when this call created
// the delivery, or {0, field, value, ...} with the existing record's fields (none if the record is gone)
var claimScript = redis.NewScript(`
local now, retention, leaseEnd = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local n = (#KEYS - 2) / 3
local state, records = {}, {}
local fresh = 0
for i = 1, n do
  local rec = redis.call('HGETALL', KEYS[3 * i + 1])
  if #rec == 0 then
    if redis.call('EXISTS', KEYS[3 * i]) == 0 then state[i] = 'new' else state[i] = 'dup' end
  else
    local lease, attempts
    for j = 1, #rec, 2 do
      if rec[j] == 'l' then lease = rec[j + 1] elseif rec[j] == 'n' then attempts = rec[j + 1] end
    end
    if lease == ARGV[6 + 3 * i] and attempts == '0' then state[i] = 'mine' else state[i] = 'dup' end
  end
  records[i] = rec
  if state[i] ~= 'dup' then fresh = fresh + 1 end
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
  if state[i] == 'dup' then
    table.insert(records[i], 1, 0)
    reply[i + 1] = records[i]
  else
    if state[i] == 'new' then
      local id = ARGV[5 + 3 * i]
      redis.call('SET', claim, 1, 'NX', 'PX', retention)
      redis.call('HSET', dlv, 'w', ARGV[4 + 3 * i], 'e', ARGV[5], 't', ARGV[6], 's', 'pending', 'n', 0, 'r', 0,
        'next', leaseEnd, 'c', now, 'u', now, 'x', expiry, 'l', ARGV[6 + 3 * i])
      redis.call('PEXPIRE', dlv, retention)
      redis.call('ZADD', KEYS[2], leaseEnd, id)
      redis.call('ZREMRANGEBYSCORE', idx, '-inf', now)
      redis.call('ZADD', idx, expiry, id)
      if redis.call('PTTL', idx) < retention then redis.call('PEXPIRE', idx, retention) end
    end
    reply[i + 1] = {1}
  end
end
return reply
`)
