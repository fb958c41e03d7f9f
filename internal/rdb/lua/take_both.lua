-- take_both.lua takes one slot of a webhook's limiter of an action (test sends, resends, retries,
-- probes: internal/ratelimit's Action) and one of its tenant's together, or neither: two GCRA limiters as rate.lua keeps them, each the theoretical arrival time (TAT), the
-- start of its next free slot, in microseconds of the Redis server's clock (TIME). A limiter grants
-- its next free slot if it starts no later than now + horizon. The script reads both limiters first;
-- only when both grant does it move each TAT an interval past its slot (from now if the TAT is past),
-- so an action one limiter refuses spends no slot of the other. A key expires a second after its
-- TAT: an idle limiter leaves nothing behind. The TATs are written with %.0f, as a Lua number
-- argument would lose its last digits. The keys share the tenant's hash tag (one slot of a cluster).
--
-- KEYS[1] -> {P:<action>:tenant:<tenant>}:webhook:<webhook_id>   the webhook's limiter: its TAT (µs, server time)
-- KEYS[2] -> {P:<action>:tenant:<tenant>}                        the tenant's limiter: its TAT (µs, server time)
-- ARGV[1] -> the webhook's interval (µs) between two slots, ≥ 1
-- ARGV[2] -> the tenant's interval (µs) between two slots, ≥ 1
-- ARGV[3] -> horizon (µs), ≥ 0: a slot is granted only if it starts no later than now + horizon
-- returns {webhook_wait, tenant_wait}: for each limiter, how long (µs) from now until it would grant a
-- slot, 0 when it grants one now. {0, 0}: the action is granted and both slots are taken; otherwise
-- nothing is written.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local horizon = tonumber(ARGV[3])

-- next_slot returns a limiter's next free slot (µs, at least now) and how long until it is granted.
local function next_slot(key)
  local tat = tonumber(redis.call('GET', key) or 0)
  if tat < now then tat = now end
  return tat, math.max(tat - now - horizon, 0)
end

local webhook_tat, webhook_wait = next_slot(KEYS[1])
local tenant_tat, tenant_wait = next_slot(KEYS[2])
if webhook_wait > 0 or tenant_wait > 0 then return {webhook_wait, tenant_wait} end

for i, tat in ipairs({webhook_tat + tonumber(ARGV[1]), tenant_tat + tonumber(ARGV[2])}) do
  redis.call('SET', KEYS[i], string.format('%.0f', tat), 'PX', math.floor((tat - now) / 1000) + 1000)
end
return {0, 0}
