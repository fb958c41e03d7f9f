-- ordered_redeliver.lua is redeliver.lua for an ordered delivery: the reset delivery goes to the
-- end of its key's sequence (it stays where it is when it is still the head: a key blocked by its
-- failure, BlockKeyOnFailure). Only as the head is it leased and queued for the attempt Redeliver
-- makes; behind others it is reset waiting (not leased, not queued), and its sequence joins the
-- blocked zset. A lost head found first is popped, as the claim does.
--
-- KEYS[1] .. KEYS[5] -> as redeliver.lua's (KEYS[3]: {P:s}:oevt:<event_id>)
-- KEYS[6] -> {P:s}:seq:<webhook_id>:<order_key>
-- KEYS[7] -> {P:s}:blocked
-- KEYS[8] -> {P:s}:inline
-- KEYS[9] -> {P:s}:tlist:<tenant>, as redeliver.lua's KEYS[6]; absent for a webhook of no tenant
-- ARGV[1] .. ARGV[11] -> as redeliver.lua's
-- ARGV[12] -> the reset record as waiting
-- ARGV[13] -> the sequence's blocked zset member
-- returns as redeliver.lua, or {RedeliverWaiting, false, record} when reset behind its key's head
--#include index
--#include lease_of
--#include promote
--#include wake
local rec = redis.call('GET', KEYS[1])
if not rec then return {} end
if leaseOf(KEYS[1], ARGV[5]) == '{{LeaseHeld}}' then
  return {{{RedeliverReset}}, redis.call('GET', KEYS[3]), rec}
end
if rec == ARGV[12] then return {{{RedeliverWaiting}}, false, rec} end
if rec ~= ARGV[6] then return {{{RedeliverUnchanged}}, false, rec} end
if redis.call('EXISTS', KEYS[3]) == 0 then return {{{RedeliverExpired}}, false, rec} end
local now, retention = tonumber(ARGV[1]), tonumber(ARGV[2])
local entry = index(KEYS[4], now, retention, ARGV[8], ARGV[9], true)
if KEYS[9] then
  local ok, err = pcall(index, KEYS[9], now, retention, ARGV[8], ARGV[9], true)
  if not ok then
    redis.call('XDEL', KEYS[4], entry) -- nothing else written yet
    error(err)
  end
end
if ARGV[11] ~= '0' then extend(KEYS[3], tonumber(ARGV[11]), 0) end
local first = redis.call('LINDEX', KEYS[6], 0)
if first and first ~= ARGV[4] and not redis.call('ZSCORE', KEYS[5], first)
    and not redis.call('ZSCORE', KEYS[8], first .. ARGV[10]) then
  promote(KEYS[6], KEYS[5], KEYS[7], ARGV[13], now) -- a lost head (orderedClaimScript)
  lower(KEYS[2], now, ARGV[10])
  first = redis.call('LINDEX', KEYS[6], 0)
end
local head = first == ARGV[4] or redis.call('RPUSH', KEYS[6], ARGV[4]) == 1
extend(KEYS[6], retention, math.floor(retention / 64))
if not head then
  redis.call('SET', KEYS[1], ARGV[12], 'PX', retention)
  redis.call('ZADD', KEYS[7], now + retention, ARGV[13])
  return {{{RedeliverWaiting}}, false, ARGV[12]}
end
redis.call('SET', KEYS[1], ARGV[7], 'PX', retention)
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[4])
lower(KEYS[2], ARGV[3], ARGV[10])
return {{{RedeliverReset}}, redis.call('GET', KEYS[3]), ARGV[7]}
