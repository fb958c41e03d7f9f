-- rate.lua is a GCRA limiter without burst: it keeps the theoretical arrival time (TAT), the start
-- of the webhook's next free slot, in microseconds of the Redis server's clock (TIME), so the clocks
-- of the replicas do not matter. Slots are exactly one interval apart; the script grants the next
-- free slots, up to the number wanted, whose start lies within the horizon from now, and moves the
-- TAT past the last one granted. The key expires a second after the TAT: an idle limiter leaves
-- nothing behind. The TAT is written with %.0f, as a Lua number argument would lose its last digits.
--
-- KEYS[1] -> {P:rate:<webhook_id>}   the TAT (µs since the Unix epoch, server time)
-- ARGV[1] -> interval (µs) between two slots, ≥ 1
-- ARGV[2] -> slots wanted, ≥ 1
-- ARGV[3] -> horizon (µs), ≥ 0: a slot is granted only if it starts no later than now + horizon
-- returns {granted, first}: the number of slots granted (from 0 to the number wanted), and the delay
-- (µs) from now of the first of them, or when none is granted, of the next free slot
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval, want, horizon = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or 0)
if tat < now then tat = now end
local first = tat - now
if first > horizon then return {0, first} end
local n = math.min(want, math.floor((horizon - first) / interval) + 1)
tat = tat + n * interval
redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.floor((tat - now) / 1000) + 1000)
return {n, first}
