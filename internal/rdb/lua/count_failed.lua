-- count_failed.lua counts a webhook's deliveries that failed for good in a window of time (one
-- delivery.failed operational event per webhook per window, internal/notify): it adds one to the
-- window's count and reads the count of the window before, so the window's first failure, which
-- sends the event, can say how many failed in the window before beyond the one that window's event was
-- about. Both keys share the webhook's hash tag. A count expires two windows after it is made.
--
-- KEYS[1] -> {P:ops:<webhook_id>}:failed:<window start ms>      the window's count
-- KEYS[2] -> {P:ops:<webhook_id>}:failed:<previous window's start ms>  the window before's count
-- ARGV[1] -> the window (ms), ≥ 1
-- returns {n, previous}: the window's count with this failure, the count of the window before (0 when none)
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[1])) end
return {n, tonumber(redis.call('GET', KEYS[2]) or 0)}
