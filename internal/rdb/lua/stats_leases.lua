-- stats_leases.lua counts the records, of one shard, whose head says an attempt holds the lease.
--
-- KEYS[i] -> delivery key i
-- returns how many are leased
local n = 0
for i = 1, #KEYS do
  if redis.pcall('GETRANGE', KEYS[i], {{TokenLen}}, {{TokenLen}}) == '{{LeaseHeld}}' then n = n + 1 end
end
return n
