-- ordered_outcome.lua is outcome.lua for a call with outcomes of ordered deliveries: when a head's
-- outcome is final and its mode lets the key go on, it pops the head off its sequence and queues
-- the next one, due at once (promote), in the same step, lowering the webhook's ready score to now. A head
-- that failed with mode OrderOnSuccess stays the head, and stays in its queue at now + retention
-- (after its record's expiry, when the lease script drops it: the queue holds every live head, see
-- ordered_claim.lua): its key waits until Redeliver resets it.
--
-- KEYS[1] .. KEYS[2+2n] -> as outcome.lua's
-- KEYS[2+2n+i] (i = 1..n) -> outcome i's sequence key (its queue key for an unordered delivery: not read)
-- KEYS[3+3n] -> {P:s}:blocked
-- ARGV[1] .. ARGV[1+7n] -> as outcome.lua's
-- ARGV[1+7n+i] -> outcome i's mode: OrderNone, OrderOnSuccess or OrderOnFinal
-- ARGV[1+8n+i] -> outcome i's blocked zset member
-- ARGV[2+9n] -> retention (ms)
-- returns outcome.lua's reply, then how many deliveries it queued (promoted)
--#include promote
--#include wake
local promoted = 0
local function outcomeCount() return (#KEYS - 3) / 3 end
local function final(i, status)
  local n = outcomeCount()
  local mode, seq = ARGV[1 + 7 * n + i], KEYS[2 + 2 * n + i]
  local id, wid = ARGV[2 + 6 * (i - 1)], ARGV[6 + 6 * (i - 1)]
  if mode == '{{OrderNone}}' or redis.call('LINDEX', seq, 0) ~= id then return end
  local now, queue = tonumber(ARGV[1]), KEYS[2 * i + 2]
  if status ~= 'success' and mode ~= '{{OrderOnFinal}}' then
    local until_ = now + tonumber(ARGV[#ARGV])
    redis.call('ZADD', queue, until_, id)
    lower(KEYS[1], until_, wid)
    return
  end
  if promote(seq, queue, KEYS[#KEYS], ARGV[1 + 8 * n + i], now) then
    lower(KEYS[1], now, wid)
    promoted = promoted + 1
  end
end
local function finish(reply)
  reply[#reply + 1] = promoted
  return reply
end
--#include outcome_body
