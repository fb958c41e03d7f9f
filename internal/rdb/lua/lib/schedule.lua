-- lib/schedule.lua is schedule(ready, inline, queue, member, wid, status, next, mode): the schedule as an
-- outcome leaves it. A delivery leased inline (mode ScheduleInline) whose entry is still in the
-- inline zset (member .. wid) leaves it (one ZREM); any other (a worker's, or an inline one a worker
-- took over) leaves its queue when it is done. A pending one is queued at next, and its webhook's ready score is
-- lowered to next at most (ZADD LT, waking the workers: lib/wake.lua). A final one leaves the ready score as it is — a ready score is a
-- lower bound of its queue's earliest due time (internal/worker/leaser.go), which a worker that finds nothing due
-- there corrects — unless its lease read its queue to the last due entry (mode ScheduleRetime): then
-- its webhook is retimed at once, so a queue that empties leaves no ready entry behind.
--#include wake
local function schedule(ready, inline, queue, member, wid, status, next, mode)
  local inlined = mode == '{{ScheduleInline}}' and redis.call('ZREM', inline, member .. wid) == 1
  if not inlined and status ~= 'pending' then
    redis.call('ZREM', queue, member)
    if mode == '{{ScheduleRetime}}' then retime(ready, queue, wid) end
  end
  if status == 'pending' then
    redis.call('ZADD', queue, next, member)
    lower(ready, next, wid)
  end
end
