-- count.lua applies attempts' outcomes to their webhooks' circuits, one after the other, in the order
-- Redis runs them: the consecutive count is exact across goroutines and replicas. A success deletes the
-- webhook's field (closing the circuit): on a closed circuit with no failures that is one HGET. A
-- failure adds one to the count and starts the run of failures (failing since now) if none is going;
-- a closed circuit opens when the count reaches breakAfter (never when it is 0: the breaker is off, the
-- run is still kept for DisableAfter); an open one reopens for twice as long (up to MaxBreakFor) on its
-- probe's failure only. A rejected attempt only starts the run of failures. Each webhook's circuit is
-- read once and written at most once per call, however many of its outcomes the call carries (the
-- calls of concurrent settles are merged into one: mergeCounts). It also counts each webhook's attempts
-- per hour by outcome (countHour, hourly.go): one HINCRBY per webhook and outcome in the call.
--
-- KEYS[1] -> {P:registry}:circuits
-- KEYS[1+k] (k = 1..w) -> {P:registry}:hourly:<webhook k>
-- ARGV[1] -> now (ms)
-- ARGV[2], ARGV[3], ARGV[4] -> breakAfter (0: never open), breakFor (ms), MaxBreakFor (ms)
-- ARGV[5+4(i-1)] .. ARGV[8+4(i-1)] -> outcome i: webhook id, CountSuccess, CountFailure or
-- CountRejected, probe token ("" for an attempt that was not the probe), its webhook's index k
-- returns per outcome two items: EventOpened (it opened or reopened the circuit), EventClosed (it
-- closed an open circuit) or EventNone; and the circuit after it ("" if none)
--#include circuit
--#include count_hour
local now, breakAfter = tonumber(ARGV[1]), tonumber(ARGV[2])
local stored, written, order = {}, {}, {}
local ok, failed = {}, {}
local reply = {}
for a = 5, #ARGV, 4 do
  local id, kind, token, k = ARGV[a], ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
  if stored[id] == nil then stored[id] = redis.call('HGET', KEYS[1], id) or false end
  local v = stored[id]
  local c, event, changed = decode(v or nil), 0, false
  if kind == 's' then
    ok[k] = (ok[k] or 0) + 1
    if v then
      changed = true
      if c and c[4] > 0 then event = 2 end
    end
    c = nil
  else
    failed[k] = (failed[k] or 0) + 1
    c = c or {0, 0, 0, 0, 0, ''}
    if c[2] == 0 then c[2], changed = now, true end
    if kind == 'f' then
      c[1], changed = c[1] + 1, true
      local probe = c[4] > 0 and token ~= '' and token == c[6]
      if probe or (c[4] == 0 and breakAfter > 0 and c[1] >= breakAfter) then
        c[4] = math.min(probe and 2 * c[4] or tonumber(ARGV[3]), tonumber(ARGV[4]))
        c[3], c[5], c[6], event = now + c[4], 0, '', 1
      end
    end
  end
  if changed then
    stored[id] = c and encode(c) or false
    if not written[id] then written[id] = true order[#order + 1] = id end
  end
  reply[#reply + 1] = event
  reply[#reply + 1] = c and encode(c) or ''
end
for _, id in ipairs(order) do
  if stored[id] then redis.call('HSET', KEYS[1], id, stored[id]) else redis.call('HDEL', KEYS[1], id) end
end
for k = 2, #KEYS do
  if ok[k - 1] then countHour(KEYS[k], now, true, ok[k - 1]) end
  if failed[k - 1] then countHour(KEYS[k], now, false, failed[k - 1]) end
end
return reply
