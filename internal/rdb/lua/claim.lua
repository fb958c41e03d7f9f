-- claim.lua claims the (webhook_id, event_id) pairs of one event and, for every pair it wins, creates
-- the delivery record, its schedule entry and its index entry, all in one atomic step. The record is
-- the claim: it is created with SET NX and the retention as its TTL, so the claim and the record
-- expire together. Go decides each new record and when it is due: leased for an attempt this call
-- makes at once (its schedule entry is then in the shard's inline zset, due at the lease's end, so a
-- crash during the attempt is recovered by a worker, and the outcome removes it with one ZREM), due
-- now for the worker (Enqueue, a webhook at its in-flight cap or rate limit: its webhook's queue), or
-- parked until its webhook's circuit may be probed. Each claim is one SET NX GET: the record is
-- written only when the pair has none, else the existing one is returned. The index entries follow:
-- when an append fails (an index key holding something else, Redis older than 7.0), the entries
-- already appended and the records just created are deleted again and the script fails before the
-- body or a schedule entry is written, so such a failure leaves nothing claimed. A pair
-- whose record is exactly the one this call would create was created by this very call, whose reply
-- was lost: it is reported as created again, so the caller can retry the script safely. An event id
-- whose key holds an ordered event's marker (ordered.go) is refused with OrderConflictReply, before
-- any write. All keys share the event's shard tag. A new schedule entry wakes the workers that do not
-- know of it (lib/wake.lua).
--
-- KEYS[1] -> {P:s}:evt:<event_id>      the event (fingerprint and body), stored once per event
-- KEYS[2] -> {P:s}:ready
-- KEYS[3] -> {P:s}:inline
-- KEYS[3i+1], KEYS[3i+2], KEYS[3i+3] (i = 1..n) -> target i's delivery key, index key, queue key
-- ARGV[1] -> now (ms)
-- ARGV[2] -> retention (ms): the expiry of the record (the index entries carry it as x)
-- ARGV[3] -> the event as stored: its fingerprint, then its body (event_store.go)
-- ARGV[6i-2] .. ARGV[6i+3] (i = 1..n) -> target i's delivery id (its inline entry is the id followed
-- by its webhook id), its hash (the id's last 12 bytes, raw), its new
-- record, when it is due (ms), its webhook id, 1 if leased for an inline attempt (else 0)
-- ARGV[3+6n+i] -> 1 if target i's index key's TTL is to be checked (else it was set lately: indexTTLs)
-- KEYS[3n+4] -> {P:s}:tevents:<tenant>  the tenant's replay index in the shard (internal/replay/index.go)
-- KEYS[3n+5] -> {P:s}:tlist:<tenant>    the tenant's delivery index in the shard (Keys.TenantIndex)
-- ARGV[4+7n], ARGV[5+7n] -> ReplayOff, ReplayAdd or ReplayPrune; the event's id (unscoped)
-- ARGV[6+7n] -> "" (no tenant: KEYS[3n+5] is not written), or 1 / 0: each new delivery is indexed in
-- the tenant's index too, its TTL checked (1) or not (0)
-- ARGV[7+7n] -> how long the index streams keep their entries (ms): Options.Retention, which may be
-- longer than ARGV[2] (a test send's records)
-- ARGV[8+7n] -> how much later than a new schedule entry is due the workers are woken for it (ms,
-- lib/wake.lua's wakeDelay)
-- ARGV[9+7n] -> how long the event's body is kept (ms): ARGV[2], or Options.PayloadRetention when
-- shorter (lib/store_event.lua)
-- returns {ClaimConflict} when the event stored under this id has another fingerprint (nothing is
-- written); else {event stored earlier or false, reply_1, ..., reply_n}: reply_i is ClaimCreated when
-- this call created the delivery, or the existing record
--#include index_all
--#include wake
local now, retention = tonumber(ARGV[1]), tonumber(ARGV[2])
local n = (#KEYS - 5) / 3
wakeDelay = tonumber(ARGV[8 + 7 * n])
local stored = redis.call('GET', KEYS[1])
if stored and string.byte(stored, 1) == 0 then return redis.error_reply('{{OrderConflictReply}}') end
if stored and string.byte(stored, 1) == 1 and string.sub(stored, 2, (1 + {{FingerprintLen}})) ~= string.sub(ARGV[3], 2, (1 + {{FingerprintLen}})) then
  return {{{ClaimConflict}}}
end
local reply, created = {false}, {}
local fresh = 0
for i = 1, n do
  -- The claim: the record is created only if the pair has none (the check and the write are one
  -- command); the existing record is returned otherwise.
  local rec = redis.call('SET', KEYS[3 * i + 1], ARGV[6 * i], 'NX', 'PX', retention, 'GET')
  if not rec then
    created[i], fresh = true, fresh + 1
  elseif rec == ARGV[6 * i] then
    reply[i + 1], fresh = {{ClaimCreated}}, fresh + 1
  else
    reply[i + 1] = rec
  end
end
-- Index entries next; if one cannot be appended, the ones appended and the records created are
-- deleted again and nothing else is written.
local tenantIndex = ARGV[6 + 7 * n]
local err = indexAll(created, n, now, retention, tonumber(ARGV[7 + 7 * n]), function(i)
  return KEYS[3 * i + 2], ARGV[6 * i - 1], ARGV[3 + 6 * n + i] == '1'
end, tenantIndex ~= '' and KEYS[3 * n + 5] or nil, tenantIndex == '1')
if err then
  for j = 1, n do if created[j] then redis.call('DEL', KEYS[3 * j + 1]) end end
  error(err)
end
local replay = ARGV[4 + 7 * n]
local indexed = replay ~= '{{ReplayOff}}'
-- The replay index: one entry per event, written when its body is first stored.
-- Its TTL is checked with every entry (the key may have expired since the caller last pruned it);
-- old entries are pruned when the caller asks.
if storeEvent(KEYS[1], stored, ARGV[3], tonumber(ARGV[9 + 7 * n]), fresh > 0 or (indexed and not stored), reply) and indexed then
  redis.call('ZADD', KEYS[3 * n + 4], now, ARGV[5 + 7 * n])
  extend(KEYS[3 * n + 4], retention, math.floor(retention / 64))
end
if replay == '{{ReplayPrune}}' then
  redis.call('ZREMRANGEBYSCORE', KEYS[3 * n + 4], '-inf', '(' .. (now - retention))
end
local inlined = nil
for i = 1, n do
  if created[i] then
    local member, due, wid = ARGV[6 * i - 2], ARGV[6 * i + 1], ARGV[6 * i + 2]
    if ARGV[6 * i + 3] == '1' then
      redis.call('ZADD', KEYS[3], due, member .. wid)
      inlined = inlined or {}
      inlined[member .. wid] = true
    else
      redis.call('ZADD', KEYS[3 * i + 3], due, member)
      lower(KEYS[2], due, wid)
    end
    reply[i + 1] = {{ClaimCreated}}
  end
end
if inlined then inlineHead(KEYS[3], inlined) end
return reply
