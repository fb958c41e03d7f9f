-- unschedule.lua removes a leased delivery from its queue without recording an attempt, and releases
-- its lease: for a record that cannot be decoded, or that is not pending.
--
-- KEYS[1] -> {P:s}:ready
-- KEYS[2] -> {P:s}:q:<webhook>
-- KEYS[3] -> delivery key
-- ARGV[1] -> queue member (record.queued)
-- ARGV[2] -> lease token
-- ARGV[3] -> webhook id
-- returns UnscheduleDone when removed, UnscheduleLeaseLost when the lease was lost
--#include lease_of
--#include retime
if leaseOf(KEYS[3], ARGV[2]) ~= '{{LeaseHeld}}' then return {{UnscheduleLeaseLost}} end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], ARGV[2] .. '{{LeaseNone}}' .. string.sub(redis.call('GET', KEYS[3]), ({{TokenLen}} + 2)), 'KEEPTTL')
retime(KEYS[1], KEYS[2], ARGV[3])
return {{UnscheduleDone}}
