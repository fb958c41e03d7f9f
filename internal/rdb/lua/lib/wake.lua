-- lib/wake.lua wakes the workers that sleep on a shard's schedule (internal/worker/listener.go): a write
-- that makes something due sooner than a worker may know publishes when, on a channel named as the zset
-- it wrote (PUBLISH: a channel is no key; a cluster forwards it to every node). lower(ready, due, wid) is
-- the ZADD LT of a webhook's ready score that publishes due on the ready zset's channel when it lowered
-- the score or added the webhook; inlineHead(inline, added) publishes the lease end of the inline zset's
-- head when it is one of the entries added (a set of members): the earliest lease a crash could leave
-- behind. Each channel is published to once per call, with the earliest time (wake). A script may set
-- wakeDelay (ms) to wake the workers that much later than a ready score it lowered is due (a claim
-- whose own process's worker takes the delivery at once: the others only if it does not).
local woken, wakeDelay = {}, 0
local function wake(zset, at)
  local ms = tonumber(at)
  if woken[zset] == nil or ms < woken[zset] then
    woken[zset] = ms
    redis.call('PUBLISH', zset, string.format('%d', ms))
  end
end
local function lower(ready, due, wid)
  if redis.call('ZADD', ready, 'LT', 'CH', due, wid) == 1 then wake(ready, tonumber(due) + wakeDelay) end
end
local function inlineHead(inline, added)
  local head = redis.call('ZRANGE', inline, 0, 0, 'WITHSCORES')
  if head[1] and added[head[1]] then wake(inline, head[2]) end
end
