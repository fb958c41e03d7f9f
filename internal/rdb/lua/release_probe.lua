-- release_probe.lua gives back a probe whose pass leased nothing (the webhook's ready entry outlived
-- its emptied queue, or another worker leased the delivery first): the circuit's probe hold ends if
-- token still holds it, so the next delivery of the webhook can be the probe at once.
--
-- KEYS[1] -> {P:registry}:circuits
-- ARGV[1], ARGV[2] -> webhook id, probe token
-- returns 1 when it released the probe, 0 when token no longer held it
--#include circuit
local c = decode(redis.call('HGET', KEYS[1], ARGV[1]))
if not c or c[4] == 0 or c[6] ~= ARGV[2] then return 0 end
c[5], c[6] = 0, ''
redis.call('HSET', KEYS[1], ARGV[1], encode(c))
return 1
