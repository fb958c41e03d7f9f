-- redeliver.lua resets a failed delivery for a new series of attempts, if its record is still the
-- one the caller read and its event's body is still stored: the new record (computed in Go) is
-- pending, at retry step 0, leased for the attempt Redeliver makes at once, and the record and its
-- index entries are extended to now + retention, the event body to now + ARGV[11] (left as it is
-- for 0: under Options.PayloadRetention a body expires that long after its event was accepted,
-- whatever is sent again). A delivery whose body has expired is not reset. A record that changed since it was read is left as it is (concurrent calls reset
-- it once), unless it is leased under this call's own token: the same call run again by a client
-- whose reply was lost, reported as reset again.
--
-- KEYS[1] -> {P:s}:rec:<h>
-- KEYS[2] -> {P:s}:ready
-- KEYS[3] -> {P:s}:evt:<event_id>
-- KEYS[4] -> {P:s}:list:<webhook_id>
-- KEYS[5] -> {P:s}:q:<webhook_id>
-- KEYS[6] -> {P:s}:tlist:<tenant>, the tenant's delivery index (Keys.TenantIndex); absent for a
-- webhook of no tenant
-- ARGV[1] -> now (ms)
-- ARGV[2] -> retention (ms)
-- ARGV[3] -> lease end (ms)
-- ARGV[4] -> the delivery id, its queue member
-- ARGV[5] -> lease token
-- ARGV[6] -> the failed record as the caller read it
-- ARGV[7] -> the reset record
-- ARGV[8] -> the delivery's hash (the id's last 12 bytes, raw)
-- ARGV[9] -> the reset record's expiry (ms): later than the failed record's, so its old index entry
-- is told apart from the new one
-- ARGV[10] -> webhook id
-- ARGV[11] -> how long from now the event's body is kept at least (ms): retention, or 0 to leave its
-- TTL as it is (Options.PayloadRetention)
-- returns {} when the record is gone; otherwise {RedeliverReset, RedeliverUnchanged or
-- RedeliverExpired, event body or false, record}
--#include index
--#include lease_of
--#include wake
local rec = redis.call('GET', KEYS[1])
if not rec then return {} end
if leaseOf(KEYS[1], ARGV[5]) == '{{LeaseHeld}}' then
  -- This very call reset it already: its reply was lost and the client sent it again.
  return {{{RedeliverReset}}, redis.call('GET', KEYS[3]), rec}
end
if rec ~= ARGV[6] then return {{{RedeliverUnchanged}}, false, rec} end
if redis.call('EXISTS', KEYS[3]) == 0 then return {{{RedeliverExpired}}, false, rec} end
local retention = tonumber(ARGV[2])
local entry = index(KEYS[4], tonumber(ARGV[1]), retention, ARGV[8], ARGV[9], true)
if KEYS[6] then
  local ok, err = pcall(index, KEYS[6], tonumber(ARGV[1]), retention, ARGV[8], ARGV[9], true)
  if not ok then
    redis.call('XDEL', KEYS[4], entry) -- nothing else written yet
    error(err)
  end
end
redis.call('SET', KEYS[1], ARGV[7], 'PX', retention)
if ARGV[11] ~= '0' then extend(KEYS[3], tonumber(ARGV[11]), 0) end
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[4])
lower(KEYS[2], ARGV[3], ARGV[10])
return {{{RedeliverReset}}, redis.call('GET', KEYS[3]), ARGV[7]}
