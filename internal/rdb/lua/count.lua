-- count.lua applies attempts' outcomes to their webhooks' circuits by the rule that reordering cannot fool
-- (docs/delivery.md, "Circuit breaker"). Each outcome carries two stamps its replica took: when its
-- request was sent and when its answer (or error) came. A success drops from the run every failure sent at
-- or before its answer (the receiver may have answered it after them); a failure is in the run only if it
-- was sent after the newest success counted so far was answered. The circuit keeps the newest success's
-- answer time (lastOK) and the send times of the failures sent after it (the newest MaxBreakAfter,
-- ascending), so the result does not depend on the order the counts reach Redis in; a replica sends a
-- failure's count only once the successes it sent before that failure was answered are counted
-- (breaker.Sends), and each failure carries the newest success that replica counted (seenOK), applied
-- first as a success. The newest success's answer is also kept in the webhook's hourly hash (field "ok"),
-- which outlives its circuit, and a failure that creates the circuit starts from it: a success one replica
-- counted while there was none still drops the failures sent at or before its answer that another replica
-- counts after it. A closed circuit opens when breakAfter failures are in the run (never when breakAfter
-- is 0: the breaker is off, the run is still kept for DisableAfter); an open one reopens for twice as long
-- (up to MaxBreakFor) on its probe's failure only, and closes on a success that leaves fewer than
-- breakAfter failures in the run. since is when the run of failures began (the oldest send in it), for
-- DisableAfter; a rejected attempt only starts it. A circuit with no failures is kept, for its lastOK,
-- until CircuitQuiet has passed since its last failure; then a success deletes it: on a healthy webhook a
-- count reads no circuit (one HGET) and keeps its newest success (an HGET and an HSET of "ok"). Each
-- webhook's circuit is read once and written at most once per call, however many of its outcomes the call
-- carries (the calls of concurrent settles are merged into one: breaker.MergeCounts). It also counts each
-- webhook's attempts per hour by outcome (countHour, hourly.go): one HINCRBY per webhook and outcome in
-- the call. It creates no circuit, and no hourly counter, for a webhook the registry no longer holds
-- (deleted, or its tenant expunged, while its attempt was in flight): one HEXISTS when a circuit or an
-- hour's counter would be created.
--
-- KEYS[1] -> {P:registry}:circuits
-- KEYS[2] -> {P:registry}:webhooks
-- KEYS[1+k] (k = 2..w+1) -> {P:registry}:hourly:<webhook k> (its counts per hour, and "ok")
-- ARGV[1] -> now (ms)
-- ARGV[2], ARGV[3], ARGV[4] -> breakAfter (0: never open), breakFor (ms), MaxBreakFor (ms)
-- ARGV[5+7(i-1)] .. ARGV[11+7(i-1)] -> outcome i: webhook id, CountSuccess, CountFailure,
-- CountRejected or CountSkipped (counted per hour only, the circuit left as it is), probe token ("" for
-- an attempt that was not the probe), when its answer came (ms), when its request was sent (ms), the
-- newest success its replica counted for the webhook (ms, 0 for none; read for failures only), its
-- webhook's index k (>= 2)
-- returns per outcome two items: EventOpened (it opened or reopened the circuit), EventClosed (it
-- closed an open circuit) or EventNone; and the circuit after it ("" if none, or not read: CountSkipped)
--#include circuit
--#include count_hour
local now, breakAfter = tonumber(ARGV[1]), tonumber(ARGV[2])
local keep = math.min(math.max(breakAfter, 1), {{MaxBreakAfter}}) -- failure times kept: enough to tell whether breakAfter remain
local stored, written, order = {}, {}, {}
local ok, failed, skipped, ids = {}, {}, {}, {}
local okAt, keptOK = {}, {} -- per webhook index k: the newest success's answer in this call; the one kept
local reply = {}

-- held reports whether the registry holds webhook id (read once per call).
local heldCache = {}
local function held(id)
  if heldCache[id] == nil then heldCache[id] = redis.call('HEXISTS', KEYS[2], id) == 1 end
  return heldCache[id]
end

-- kept is the newest success's answer stored for webhook index k (0: none), read once per call.
local function kept(k)
  if keptOK[k] == nil then keptOK[k] = tonumber(redis.call('HGET', KEYS[k + 1], 'ok')) or 0 end
  return keptOK[k]
end

-- afterSuccess drops from c the failures sent at or before at (a success's answer), and returns
-- whether it closed c.
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

-- afterFailure adds a failure (or, counted false, a rejection) sent at sent and answered at at to c,
-- after lastOK.
local function afterFailure(c, sent, at, counted)
  if c[2] == 0 or sent < c[2] then c[2] = sent end
  if not counted then return end
  local fails, i = c[9], #c[9] + 1
  while i > 1 and fails[i - 1] > sent do i = i - 1 end
  table.insert(fails, i, sent)
  if #fails > keep then table.remove(fails, 1) end
  c[1], c[8] = c[1] + 1, math.max(c[8], at)
end

for a = 5, #ARGV, 7 do
  local id, kind, token = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  local at, sent, seenOK, k = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6])
  ids[k] = id
  if kind == 'k' then
    skipped[k] = (skipped[k] or 0) + 1 -- nothing was sent: the circuit is neither read nor written
    reply[#reply + 1] = 0
    reply[#reply + 1] = ''
  else
    if stored[id] == nil then stored[id] = redis.call('HGET', KEYS[1], id) or false end
    local c, event, changed = decode(stored[id] or nil), 0, false
    if kind == 's' then
      ok[k], okAt[k] = (ok[k] or 0) + 1, math.max(okAt[k] or 0, at)
      if c and at >= c[7] then
        c[7], changed = at, true
        if afterSuccess(c, at) then event = 2 end
        if c[4] == 0 and c[1] == 0 and at - c[8] >= {{CircuitQuietMs}} then c = nil end
      end
    else
      failed[k] = (failed[k] or 0) + 1
      c = c or {0, 0, 0, 0, 0, '', math.max(kept(k), okAt[k] or 0), 0, {}}
      if seenOK > c[7] then -- a success its replica counted that the circuit does not know (yet)
        c[7], changed = seenOK, true
        if afterSuccess(c, seenOK) then event = 2 end
      end
      if sent > c[7] then
        afterFailure(c, sent, at, kind == 'f')
        changed = true
      end
      local probe = kind == 'f' and c[4] > 0 and token ~= '' and token == c[6]
      if probe or (kind == 'f' and sent > c[7] and c[4] == 0 and breakAfter > 0 and c[1] >= breakAfter) then
        c[4] = math.min(probe and 2 * c[4] or tonumber(ARGV[3]), tonumber(ARGV[4]))
        c[3], c[5], c[6], event, changed = now + c[4], 0, '', 1, true
      end
      if not changed then c = decode(stored[id] or nil) end
    end
    if changed and c and not stored[id] and not held(id) then
      c, changed, event = nil, false, 0 -- no circuit for a webhook that is gone
    end
    if changed then
      stored[id] = c and encode(c) or false
      if not written[id] then written[id] = true order[#order + 1] = id end
    end
    reply[#reply + 1] = event
    reply[#reply + 1] = stored[id] or ''
  end
end
for _, id in ipairs(order) do
  if stored[id] then redis.call('HSET', KEYS[1], id, stored[id]) else redis.call('HDEL', KEYS[1], id) end
end
for k = 3, #KEYS do
  local created = false
  if ok[k - 1] then created = countHour(KEYS[k], now, 's', ok[k - 1]) end
  if failed[k - 1] then created = countHour(KEYS[k], now, 'f', failed[k - 1]) or created end
  if skipped[k - 1] then created = countHour(KEYS[k], now, 'k', skipped[k - 1]) or created end
  if okAt[k - 1] and okAt[k - 1] > kept(k - 1) then
    redis.call('HSET', KEYS[k], 'ok', string.format('%d', okAt[k - 1]))
  end
  if created and not held(ids[k - 1]) then redis.call('DEL', KEYS[k]) end
end
return reply
