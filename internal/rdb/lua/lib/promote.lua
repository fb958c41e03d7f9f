-- lib/promote.lua is promote(seq, queue, blocked, member, now): pops the head of a sequence, queues the
-- next one due at now, and takes the sequence off the blocked zset when nothing waits behind its new
-- head (a list left empty was no longer in it); it returns whether it queued one. The caller retimes
-- the webhook's ready entry.
local function promote(seq, queue, blocked, member, now)
  redis.call('LPOP', seq)
  local nxt = redis.call('LINDEX', seq, 0)
  if not nxt then return false end
  redis.call('ZADD', queue, now, nxt)
  if redis.call('LLEN', seq) < 2 then redis.call('ZREM', blocked, member) end
  return true
end
