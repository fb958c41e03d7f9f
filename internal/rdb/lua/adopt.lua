-- adopt.lua takes deliveries whose inline attempt's lease ended without an outcome from the shard's
-- inline zset into their webhooks' queues, due at once (their score, the lease's end, is past), and
-- lowers each webhook's ready score to it. An entry no longer there, or not yet due, is left alone.
-- Every entry is checked before the first write. A lowered ready score wakes the workers (lib/wake.lua).
--
-- KEYS[1] -> {P:s}:ready
-- KEYS[2] -> {P:s}:inline
-- KEYS[2+i] (i = 1..n) -> entry i's webhook's queue
-- ARGV[1] -> now (ms): entries scored later are left alone
-- ARGV[2i], ARGV[2i+1] -> entry i's delivery id, webhook id (the entry is the two joined)
-- returns how many entries it took
--#include wake
local now, n = tonumber(ARGV[1]), #KEYS - 2
local due = {}
for i = 1, n do
  local score = redis.call('ZSCORE', KEYS[2], ARGV[2 * i] .. ARGV[2 * i + 1])
  if score and tonumber(score) <= now then due[i] = score end
end
local took = 0
for i = 1, n do
  if due[i] then
    redis.call('ZREM', KEYS[2], ARGV[2 * i] .. ARGV[2 * i + 1])
    redis.call('ZADD', KEYS[2 + i], due[i], ARGV[2 * i])
    lower(KEYS[1], due[i], ARGV[2 * i + 1])
    took = took + 1
  end
end
return took
