-- lease.lua leases due deliveries of some webhooks of one shard: each candidate still due has its
-- queue entry moved to the lease's end and the lease token written into its record's head, so no
-- other worker takes it until the lease expires. A candidate already leased under its token and lease
-- end was leased by this very call, run again by a client whose reply was lost: it is reported leased
-- again. Every candidate is checked before the first write. The webhooks flagged to be retimed (their
-- queues were read to the last due entry, or found with none) then have their ready score set to
-- their queue's head; the others' stay as they are, a lower bound (see the schedule's doc above).
--
-- KEYS[1] -> {P:s}:ready
-- KEYS[1+i] (i = 1..m) -> {P:s}:q:<webhook i>
-- KEYS[1+m+j] (j = 1..n) -> delivery key of candidate j
-- ARGV[1] -> now (ms)
-- ARGV[2] -> lease end (ms)
-- ARGV[3], ARGV[4] -> m, n
-- ARGV[3+2i], ARGV[4+2i] -> webhook i's id, 1 if it is to be retimed (else 0)
-- ARGV[1+4+2m+3(j-1)] .. ARGV[3+4+2m+3(j-1)] -> candidate j's delivery id, lease token, webhook index i
-- returns per candidate: LeaseNotDue (another worker leased it), LeaseExpired (its record has expired)
-- or LeaseNotRecord (its key holds no record) — the queue entry of both is removed — or the record
-- once leased; then per webhook retimed, in order, its new ready score ("" when it left the ready zset)
--#include retime
local now, leaseEnd, m, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local base = 4 + 2 * m
local state, recs = {}, {}
for j = 1, n do
  local a = base + 3 * (j - 1)
  local member, token, queue = ARGV[a + 1], ARGV[a + 2], KEYS[1 + tonumber(ARGV[a + 3])]
  local score = tonumber(redis.call('ZSCORE', queue, member))
  state[j] = {{LeaseNotDue}}
  if score and (score <= now or score == leaseEnd) then
    local rec = redis.pcall('GET', KEYS[1 + m + j])
    if type(rec) == 'string' and score == leaseEnd and string.sub(rec, 1, ({{TokenLen}} + 1)) == token .. '{{LeaseHeld}}' then
      state[j], recs[j] = 'mine', rec
    elseif score > now then
    elseif type(rec) == 'table' or rec and #rec < {{RecordHeadLen}} then
      state[j] = {{LeaseNotRecord}}
    elseif not rec then
      state[j] = {{LeaseExpired}}
    else
      state[j], recs[j] = 'lease', rec
    end
  end
end
local reply = {}
for j = 1, n do
  local a = base + 3 * (j - 1)
  local member, queue, rec = ARGV[a + 1], KEYS[1 + tonumber(ARGV[a + 3])], KEYS[1 + m + j]
  if state[j] == 'lease' then
    redis.call('ZADD', queue, ARGV[2], member)
    local leased = ARGV[a + 2] .. '{{LeaseHeld}}' .. string.sub(recs[j], ({{TokenLen}} + 2))
    redis.call('SET', rec, leased, 'KEEPTTL')
    reply[j] = leased
  elseif state[j] == 'mine' then
    reply[j] = recs[j]
  else
    if state[j] ~= {{LeaseNotDue}} then redis.call('ZREM', queue, member) end
    reply[j] = state[j]
  end
end
for i = 1, m do
  if ARGV[4 + 2 * i] == '1' then reply[#reply + 1] = retime(KEYS[1], KEYS[1 + i], ARGV[3 + 2 * i]) end
end
return reply
