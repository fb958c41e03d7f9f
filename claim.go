package webhooks

import (
	"strconv"

	"github.com/redis/go-redis/v9"
)

// claimScript claims the (webhook_id, event_id) pairs of one event and, for every pair it wins, creates
// the delivery record, its schedule entry and its index entry, all in one atomic step. The record is
// the claim: it is created with SET NX and the retention as its TTL, so the claim and the record
// expire together. Go decides each new record and when it is due: leased for an attempt this call
// makes at once (due at the lease's end, so a crash during the attempt is recovered by a worker), due
// now for the worker (Enqueue, a webhook at its in-flight cap or rate limit), or parked until its
// webhook's circuit may be probed. Every claim is checked before the first write. The index entries are
// written first: when an append fails (an index key holding something else, Redis older than 7.0), the
// entries already appended are deleted again and the script fails before the body, a record or a
// schedule entry is written, so such a failure leaves nothing claimed. A pair whose record is exactly
// the one this call would create was created by this very call, whose reply was lost: it is reported
// as created again, so the caller can retry the script safely. An event id whose body key holds an
// ordered event's marker (ordered.go) is refused with orderConflictReply, before any write. All keys
// share the event's shard tag.
//
// KEYS[1] -> {P:s}:evt:<event_id>      the request body, stored once per event
// KEYS[2] -> {P:s}:ready
// KEYS[3i], KEYS[3i+1], KEYS[3i+2] (i = 1..n) -> target i's delivery key, index key, queue key
// ARGV[1] -> now (ms)
// ARGV[2] -> retention (ms): the expiry of the record, and of the index entry
// ARGV[3] -> request body
// ARGV[5i-1] .. ARGV[5i+3] (i = 1..n) -> target i's delivery id, its hash (the id's last 12 bytes,
// raw), its new record, when it is due (ms), its webhook id
// returns {body stored earlier or false, reply_1, ..., reply_n}: reply_i is claimCreated when this
// call created the delivery, or the existing record
var claimScript = redis.NewScript(indexFunction + `
local now, retention = tonumber(ARGV[1]), tonumber(ARGV[2])
local n = (#KEYS - 2) / 3
local stored = redis.call('GET', KEYS[1])
if stored and string.byte(stored, 1) == 0 then return redis.error_reply('` + orderConflictReply + `') end
local reply, created = {false}, {}
local fresh = 0
for i = 1, n do
  local rec = redis.call('GET', KEYS[3 * i])
  if not rec then
    created[i], fresh = true, fresh + 1
  elseif rec == ARGV[5 * i + 1] then
    reply[i + 1], fresh = ` + strconv.Itoa(claimCreated) + `, fresh + 1
  else
    reply[i + 1] = rec
  end
end
-- Index entries first; if one cannot be appended, the ones appended are deleted again and nothing
-- else is written.
local appended = {}
for i = 1, n do
  if created[i] then
    local ok, id = pcall(index, KEYS[3 * i + 1], now, retention, ARGV[5 * i], now + retention)
    if not ok then
      for _, e in ipairs(appended) do redis.call('XDEL', e[1], e[2]) end
      error(id)
    end
    appended[#appended + 1] = {KEYS[3 * i + 1], id}
  end
end
if fresh > 0 then
  if stored then
    reply[1] = stored
    extend(KEYS[1], retention, 0)
  else
    redis.call('SET', KEYS[1], ARGV[3], 'PX', retention)
  end
end
for i = 1, n do
  if created[i] then
    redis.call('SET', KEYS[3 * i], ARGV[5 * i + 1], 'NX', 'PX', retention)
    redis.call('ZADD', KEYS[3 * i + 2], ARGV[5 * i + 2], ARGV[5 * i - 1])
    redis.call('ZADD', KEYS[2], 'LT', ARGV[5 * i + 2], ARGV[5 * i + 3])
    reply[i + 1] = ` + strconv.Itoa(claimCreated) + `
  end
end
return reply
`)

// claimCreated is claimScript's reply for a pair it created.
const claimCreated = 1

// indexFunction is the Lua function that adds a delivery to a webhook's per-shard index, a stream:
// index(key, now, retention, hash, expiry) appends {d = hash, x = expiry (the record's, ms)} under the
// id <now>-<seq>, or after the stream's newest entry when that is later (another replica's clock is
// ahead: stream ids only grow), trims entries older than a retention (their records have expired, or
// were redelivered and indexed again), and keeps the key at least as long as its newest entry: when
// its TTL is shorter than a retention it is set to a retention and 1/64 more (extend, luaExtend), so most writes leave it
// as it is. It returns the entry's id, and raises an error, having written nothing, when key holds
// something other than a stream or Redis is older than 7.0 (no <ms>-* ids).
var indexFunction = luaExtend + `
local function index(key, now, retention, hash, expiry)
  local minid = now - retention
  local id = redis.pcall('XADD', key, 'MINID', '~', minid, now .. '-*', 'd', hash, 'x', expiry)
  if type(id) == 'table' then
    local top = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
    if not top then error('webhooks: cannot append to ' .. key .. ': ' .. tostring(id.err)) end
    id = redis.call('XADD', key, 'MINID', '~', minid, string.match(top[1], '^%d+') .. '-*', 'd', hash, 'x', expiry)
  end
  extend(key, retention, math.floor(retention / 64))
  return id
end
`
