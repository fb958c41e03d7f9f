-- ordered_claim.lua is claim.lua for an ordered event: the same checks (an id stored with another
-- fingerprint is refused with ClaimConflict), index entries and stored event,
-- and per created pair its sequence: the pair is appended to its (webhook, key)'s list; the head is
-- created as Go planned it (leased for an inline attempt, or queued), any other pair is created
-- waiting (its second record: not leased, no next attempt) and is not queued, and its list joins
-- the blocked zset. Before appending, a head that is in no queue (lost, see the file comment) is
-- popped and the one after it queued (promote). A pair whose record is either of the two this call
-- would create was created by this very call, whose reply was lost: it is reported as created (or
-- waiting) again. A new schedule entry wakes the workers that do not know of it (lib/wake.lua).
--
-- KEYS[1] -> {P:k}:oevt:<event_id>
-- KEYS[2] -> {P:k}:ready
-- KEYS[3] -> {P:k}:inline
-- KEYS[4] -> {P:k}:blocked
-- KEYS[4i+1] .. KEYS[4i+4] (i = 1..n) -> target i's delivery key, index key, queue key, sequence key
-- ARGV[1] -> now (ms)
-- ARGV[2] -> retention (ms)
-- ARGV[3] -> the stored event (storedEvent: fingerprint and body)
-- ARGV[8i-4] .. ARGV[8i+3] (i = 1..n) -> target i's delivery id, hash, record as head, due (ms),
-- webhook id, record as waiting, blocked zset member, 1 if leased for an inline attempt (else 0)
-- ARGV[3+8n+i] -> 1 if target i's index key's TTL is to be checked (indexTTLs)
-- KEYS[4n+5] -> {P:k}:tlist:<tenant>, and ARGV[4+9n] -> "", 1 or 0: the tenant's delivery index, as
-- claim.lua's KEYS[3n+5] and ARGV[6+7n]
-- ARGV[5+9n] -> how long the index streams keep their entries (ms), as claim.lua's ARGV[7+7n]
-- ARGV[6+9n] -> the wakes' delay (ms), as claim.lua's ARGV[8+7n]
-- ARGV[7+9n] -> how long the event's body is kept (ms), as claim.lua's ARGV[9+7n]
-- returns {body stored earlier or false, reply_1, ..., reply_n}: reply_i is ClaimCreated (the head),
-- ClaimWaiting, or the existing record
--#include index_all
--#include promote
--#include wake
local now, retention = tonumber(ARGV[1]), tonumber(ARGV[2])
local n = (#KEYS - 5) / 4
wakeDelay = tonumber(ARGV[6 + 9 * n])
local stored = redis.call('GET', KEYS[1])
if stored and string.sub(stored, 2, (1 + {{FingerprintLen}})) ~= string.sub(ARGV[3], 2, (1 + {{FingerprintLen}})) then
  return {{{ClaimConflict}}}
end
local reply, created = {false}, {}
local fresh = 0
for i = 1, n do
  local rec, a = redis.call('GET', KEYS[4 * i + 1]), 8 * i - 4
  if not rec then
    created[i], fresh = true, fresh + 1
  elseif rec == ARGV[a + 2] then
    reply[i + 1], fresh = {{ClaimCreated}}, fresh + 1
  elseif rec == ARGV[a + 5] then
    reply[i + 1], fresh = {{ClaimWaiting}}, fresh + 1
  else
    reply[i + 1] = rec
  end
end
local tenantIndex = ARGV[4 + 9 * n]
local err = indexAll(created, n, now, retention, tonumber(ARGV[5 + 9 * n]), function(i)
  return KEYS[4 * i + 2], ARGV[8 * i - 3], ARGV[3 + 8 * n + i] == '1'
end, tenantIndex ~= '' and KEYS[4 * n + 5] or nil, tenantIndex == '1')
if err then error(err) end
storeEvent(KEYS[1], stored, ARGV[3], tonumber(ARGV[7 + 9 * n]), fresh > 0, reply)
local inlined = nil
for i = 1, n do
  if created[i] then
    local k, a = 4 * i + 1, 8 * i - 4
    local id, queue, seq, wid, member = ARGV[a], KEYS[k + 2], KEYS[k + 3], ARGV[a + 4], ARGV[a + 6]
    local len = redis.call('RPUSH', seq, id)
    if len == 1 then
      redis.call('PEXPIRE', seq, retention + math.floor(retention / 64))
    else
      extend(seq, retention, math.floor(retention / 64))
      local head = redis.call('LINDEX', seq, 0)
      if not redis.call('ZSCORE', queue, head) and not redis.call('ZSCORE', KEYS[3], head .. wid) then
        promote(seq, queue, KEYS[4], member, now) -- a lost head: the one after it is due now
        if redis.call('LINDEX', seq, 0) == id then
          redis.call('ZREM', queue, id) -- this one: created as planned below
          len = 1
        else
          lower(KEYS[2], now, wid)
        end
      end
    end
    if len > 1 then
      redis.call('SET', KEYS[k], ARGV[a + 5], 'NX', 'PX', retention)
      redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
      redis.call('ZADD', KEYS[4], now + retention, member)
      reply[i + 1] = {{ClaimWaiting}}
    else
      redis.call('SET', KEYS[k], ARGV[a + 2], 'NX', 'PX', retention)
      if ARGV[a + 7] == '1' then
        redis.call('ZADD', KEYS[3], ARGV[a + 3], id .. wid)
        inlined = inlined or {}
        inlined[id .. wid] = true
      else
        redis.call('ZADD', queue, ARGV[a + 3], id)
        lower(KEYS[2], ARGV[a + 3], wid)
      end
      reply[i + 1] = {{ClaimCreated}}
    end
  end
end
if inlined then inlineHead(KEYS[3], inlined) end
return reply
