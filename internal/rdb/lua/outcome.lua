-- outcome.lua records the outcomes of attempts on deliveries of one shard, each only if the delivery
-- is still leased by the token its attempt was made under, so a worker whose lease expired cannot
-- overwrite a newer attempt's outcome. The new record is computed in Go from the record the lease was
-- taken on (nothing else writes a record while it is leased), and marks the lease settled, so that the
-- same call run again (a client retrying a request whose reply was lost) reports it recorded instead
-- of lost, and writes nothing twice. A pending delivery is queued again at its next attempt, a final
-- one leaves its queue (lib/schedule.lua). Every lease is checked before the first write. (The circuits,
-- and the hourly counts, count the attempts beside it: count.lua.)
--
-- KEYS[1] -> {P:s}:ready
-- KEYS[2] -> {P:s}:inline
-- KEYS[2i+1], KEYS[2i+2] (i = 1..n) -> outcome i's delivery key, queue key
-- ARGV[1] -> now (ms)
-- ARGV[2+6(i-1)] .. ARGV[7+6(i-1)] -> outcome i: queue member (record.queued), lease token, status, next attempt (ms,
-- pending only), webhook id, schedule mode (ScheduleQueued, ScheduleInline: its schedule entry may be
-- in the inline zset, ScheduleRetime); ARGV[1+6n+i] -> outcome i's new record
-- returns per outcome OutcomeRecorded (now or by an earlier run of the same call) or OutcomeLeaseLost
-- (nothing written)
local function outcomeCount() return (#KEYS - 2) / 2 end
local function final(i, status) end
local function finish(reply) return reply end
--#include outcome_body
