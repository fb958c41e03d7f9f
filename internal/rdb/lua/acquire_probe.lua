-- acquire_probe.lua grants an open circuit's probe once its open period has ended, unless it is held.
--
-- KEYS[1] -> {P:registry}:circuits
-- ARGV[1], ARGV[2] -> webhook id, now (ms)
-- ARGV[3], ARGV[4] -> probe token (an error when empty), hold (ms): how long the probe is the caller's
-- returns {ProbeGranted, ProbeClosed, ProbeWaiting or ProbeHeld; the circuit after it ("" if none)}
--#include circuit
if ARGV[3] == '' then return redis.error_reply('empty probe token') end
local now, c = tonumber(ARGV[2]), decode(redis.call('HGET', KEYS[1], ARGV[1]))
if not c or c[4] == 0 then return {{{ProbeClosed}}, c and encode(c) or ''} end
if now < c[3] then return {{{ProbeWaiting}}, encode(c)} end
if c[5] > now then return {{{ProbeHeld}}, encode(c)} end
c[5], c[6] = now + tonumber(ARGV[4]), ARGV[3]
redis.call('HSET', KEYS[1], ARGV[1], encode(c))
return {{{ProbeGranted}}, encode(c)}
