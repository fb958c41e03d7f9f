-- take_concurrency.lua takes slots of a webhook's MaxConcurrency for attempts about to start. The
-- webhook's slots are a sorted set of their holders' tokens, each scored by the end of its lease (ms of
-- the Redis server's clock, so the replicas' clocks do not matter). Holders whose lease has ended do
-- not count (they are dropped when a slot is granted), so a crashed holder's slot comes back when its
-- lease ends. Nothing is written when no slot is granted. The key expires with the last lease it holds.
-- A holder gives its slot back with ZREM when its attempt ends.
--
-- KEYS[1] -> {P:concurrency:<webhook_id>}
-- ARGV[1] -> the webhook's MaxConcurrency, >= 1
-- ARGV[2] -> lease (ms), >= 1: how long a slot is held at most
-- ARGV[3..] -> the tokens of the attempts wanting a slot, one each
-- returns the number of slots granted, to ARGV[3..] in order
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max, lease = tonumber(ARGV[1]), tonumber(ARGV[2])
if not max or max < 1 or not lease or lease < 1 then return redis.error_reply('bad MaxConcurrency or lease') end
local n = math.max(0, math.min(max - redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf'), #ARGV - 2))
if n == 0 then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
for i = 1, n do redis.call('ZADD', KEYS[1], now + lease, ARGV[2 + i]) end
if n > 0 then redis.call('PEXPIRE', KEYS[1], lease) end
return n
