-- count.lua applies attempts' outcomes to their webhooks' circuits in the order the receivers answered
-- them: each outcome carries its answer's time, and a failure counts only if no success was answered
-- after it (answers in the same millisecond are in the order Redis runs their counts). The circuit keeps the newest success's time (lastOK) and the failures answered after it
-- (the newest MaxBreakAfter of their times), so an outcome that reaches Redis late, from a slow
-- goroutine or another replica, lands where the receiver put it: a success drops the failures answered
-- before it, a failure answered before the newest success is not counted. A closed circuit opens when
-- breakAfter failures were answered after the newest success (never when breakAfter is 0: the breaker
-- is off, the run is still kept for DisableAfter); an open one reopens for twice as long (up to
-- MaxBreakFor) on its probe's failure only, and closes on a success that leaves fewer than breakAfter
-- failures after it. since is when the run of failures began (the oldest answer in it), for
-- DisableAfter; a rejected attempt only starts it. A circuit with no failures is kept, for its lastOK,
-- until CircuitQuiet has passed since its last failure; then a success deletes it: on a healthy
-- webhook a count is one HGET. Each webhook's circuit is read once and written at most once per call,
-- however many of its outcomes the call carries (the calls of concurrent settles are merged into one:
-- breaker.MergeCounts). It also counts each webhook's attempts per hour by outcome (countHour, hourly.go): one
-- HINCRBY per webhook and outcome in the call.
--
-- KEYS[1] -> {P:registry}:circuits
-- KEYS[1+k] (k = 1..w) -> {P:registry}:hourly:<webhook k>
-- ARGV[1] -> now (ms)
-- ARGV[2], ARGV[3], ARGV[4] -> breakAfter (0: never open), breakFor (ms), MaxBreakFor (ms)
-- ARGV[5+5(i-1)] .. ARGV[9+5(i-1)] -> outcome i: webhook id, CountSuccess, CountFailure or
-- CountRejected, probe token ("" for an attempt that was not the probe), when its answer came (ms), its
-- webhook's index k
-- returns per outcome two items: EventOpened (it opened or reopened the circuit), EventClosed (it
-- closed an open circuit) or EventNone; and the circuit after it ("" if none)
--#include circuit
--#include count_hour
local now, breakAfter = tonumber(ARGV[1]), tonumber(ARGV[2])
local keep = math.min(math.max(breakAfter, 1), {{MaxBreakAfter}}) -- failure times kept: enough to tell whether breakAfter remain
local stored, written, order = {}, {}, {}
local ok, failed = {}, {}
local reply = {}

-- afterSuccess drops from c the failures answered at or before at, and returns whether it closed c.
local function afterSuccess(c, at)
  local fails, n = c[9], 0
  while n < #fails and fails[n + 1] <= at do n = n + 1 end
  if n > 0 or #fails == 0 then -- every failure older than the newest dropped one is at or before at
    local rest = {}
    for i = n + 1, #fails do rest[#rest + 1] = fails[i] end
    c[1], c[2], c[9] = #rest, rest[1] or 0, rest
  elseif c[2] <= at then -- failures older than every kept one, not kept, may straddle at
    c[2] = fails[1]
  end
  if c[4] > 0 and c[1] < keep then
    c[3], c[4], c[5], c[6] = 0, 0, 0, ''
    return true
  end
  return false
end

-- afterFailure adds a failure (or, counted false, a rejection) answered at at to c, after lastOK.
local function afterFailure(c, at, counted)
  if c[2] == 0 or at < c[2] then c[2] = at end
  if not counted then return end
  local fails, i = c[9], #c[9] + 1
  while i > 1 and fails[i - 1] > at do i = i - 1 end
  table.insert(fails, i, at)
  if #fails > keep then table.remove(fails, 1) end
  c[1], c[8] = c[1] + 1, math.max(c[8], at)
end

for a = 5, #ARGV, 5 do
  local id, kind, token = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  local at, k = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  if stored[id] == nil then stored[id] = redis.call('HGET', KEYS[1], id) or false end
  local c, event, changed = decode(stored[id] or nil), 0, false
  if kind == 's' then
    ok[k] = (ok[k] or 0) + 1
    if c and at >= c[7] then
      c[7], changed = at, true
      if afterSuccess(c, at) then event = 2 end
      if c[4] == 0 and c[1] == 0 and at - c[8] >= {{CircuitQuietMs}} then c = nil end
    end
  else
    failed[k] = (failed[k] or 0) + 1
    c = c or {0, 0, 0, 0, 0, '', 0, 0, {}}
    if at >= c[7] then
      afterFailure(c, at, kind == 'f')
      changed = true
    end
    local probe = kind == 'f' and c[4] > 0 and token ~= '' and token == c[6]
    if probe or (kind == 'f' and changed and c[4] == 0 and breakAfter > 0 and c[1] >= breakAfter) then
      c[4] = math.min(probe and 2 * c[4] or tonumber(ARGV[3]), tonumber(ARGV[4]))
      c[3], c[5], c[6], event, changed = now + c[4], 0, '', 1, true
    end
    if not changed then c = decode(stored[id] or nil) end
  end
  if changed then
    stored[id] = c and encode(c) or false
    if not written[id] then written[id] = true order[#order + 1] = id end
  end
  reply[#reply + 1] = event
  reply[#reply + 1] = stored[id] or ''
end
for _, id in ipairs(order) do
  if stored[id] then redis.call('HSET', KEYS[1], id, stored[id]) else redis.call('HDEL', KEYS[1], id) end
end
for k = 2, #KEYS do
  if ok[k - 1] then countHour(KEYS[k], now, true, ok[k - 1]) end
  if failed[k - 1] then countHour(KEYS[k], now, false, failed[k - 1]) end
end
return reply
