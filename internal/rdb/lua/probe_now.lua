-- probe_now.lua ends an open circuit's open period at now, unless a probe is held.
--
-- KEYS[1] -> {P:registry}:circuits
-- ARGV[1], ARGV[2] -> webhook id, now (ms)
-- returns {ProbeGranted (the open period has ended), ProbeClosed or ProbeHeld; the circuit after it
-- ("" if none); the end of the open period before it (ms, 0 if none)}
--#include circuit
local now, c = tonumber(ARGV[2]), decode(redis.call('HGET', KEYS[1], ARGV[1]))
if not c or c[4] == 0 then return {{{ProbeClosed}}, c and encode(c) or '', 0} end
local was = c[3]
if c[5] > now then return {{{ProbeHeld}}, encode(c), was} end
if c[3] > now then
  c[3] = now
  redis.call('HSET', KEYS[1], ARGV[1], encode(c))
end
return {{{ProbeGranted}}, encode(c), was}
