-- wake_parked.lua makes some of a webhook's queued deliveries in one shard due at a time: each
-- candidate still in the queue, pending and not leased (an attempt in flight keeps its lease end);
-- then the webhook's ready entry is due then too, if any was made due (waking the workers: lib/wake.lua).
--
-- KEYS[1] -> {P:s}:ready
-- KEYS[2] -> {P:s}:q:<webhook_id>
-- KEYS[2+j] -> {P:s}:rec:<h> of candidate j
-- ARGV[1] -> when they are due (ms)
-- ARGV[2] -> webhook id
-- ARGV[2+j] -> candidate j's queue member
-- returns how many candidates are due by then
--#include wake
local due, n = ARGV[1], 0
for j = 3, #KEYS do
  local member, rec = ARGV[j], redis.call('GET', KEYS[j])
  if rec and string.sub(rec, 18, 18) == '{{StatusPending}}' and string.sub(rec, 17, 17) ~= '{{LeaseHeld}}'
     and redis.call('ZSCORE', KEYS[2], member) then
    redis.call('ZADD', KEYS[2], 'XX', 'LT', due, member)
    n = n + 1
  end
end
if n > 0 then lower(KEYS[1], due, ARGV[2]) end
return n
