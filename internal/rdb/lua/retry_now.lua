-- retry_now.lua makes a pending delivery that waits for a retry due now: its schedule entry (only if
-- it has one: a delivery held back, e.g. behind an earlier one of its order key, stays held) and its
-- webhook in the shard's schedule (waking the workers: lib/wake.lua). A delivery that is not pending, or
-- in flight, is left as it is.
--
-- KEYS[1] -> {P:s}:rec:<h>
-- KEYS[2] -> {P:s}:ready
-- KEYS[3] -> {P:s}:q:<webhook_id>
-- ARGV[1] -> now (ms)
-- ARGV[2] -> the delivery id, its queue member
-- ARGV[3] -> webhook id
-- returns RetryGone, RetryNotPending, RetryInFlight, RetryNotQueued or RetryDue
--#include wake
local rec = redis.call('GET', KEYS[1])
if not rec then return {{RetryGone}} end
if string.sub(rec, 18, 18) ~= '{{StatusPending}}' then return {{RetryNotPending}} end
if string.sub(rec, 17, 17) == '{{LeaseHeld}}' then return {{RetryInFlight}} end
if redis.call('ZADD', KEYS[3], 'XX', 'CH', ARGV[1], ARGV[2]) == 0 and not redis.call('ZSCORE', KEYS[3], ARGV[2]) then
  return {{RetryNotQueued}}
end
lower(KEYS[2], ARGV[1], ARGV[3])
return {{RetryDue}}
