-- lib/retime.lua is retime(ready, queue, wid): sets the webhook's entry in the shard's ready zset to its
-- queue's earliest score, or removes it when the queue is empty, and returns that score ("" when
-- removed). It undoes a park: a worker that finds the webhook blocked parks it again. A score it raises
-- (or adds) costs one ZADD; one it lowers (a park undone) wakes the workers (lib/wake.lua).
--#include wake
local function retime(ready, queue, wid)
  local first = redis.call('ZRANGE', queue, 0, 0, 'WITHSCORES')
  if first[2] then
    if redis.call('ZADD', ready, 'GT', 'CH', first[2], wid) == 0 then lower(ready, first[2], wid) end
    return first[2]
  end
  redis.call('ZREM', ready, wid)
  return ''
end
