package webhooks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	ks "github.com/smartdrop/webhooks/internal/keyspace"
)

// claimScript claims the (webhook_id, event_id) pairs of one event and, for every pair it wins, creates
// the delivery record, its schedule entry and its index entry, all in one atomic step. The record is
// the claim: it is created with SET NX and the retention as its TTL, so the claim and the record
// expire together. Go decides each new record and when it is due: leased for an attempt this call
// makes at once (its schedule entry is then in the shard's inline zset, due at the lease's end, so a
// crash during the attempt is recovered by a worker, and the outcome removes it with one ZREM), due
// now for the worker (Enqueue, a webhook at its in-flight cap or rate limit: its webhook's queue), or
// parked until its webhook's circuit may be probed. Each claim is one SET NX GET: the record is
// written only when the pair has none, else the existing one is returned. The index entries follow:
// when an append fails (an index key holding something else, Redis older than 7.0), the entries
// already appended and the records just created are deleted again and the script fails before the
// body or a schedule entry is written, so such a failure leaves nothing claimed. A pair
// whose record is exactly the one this call would create was created by this very call, whose reply
// was lost: it is reported as created again, so the caller can retry the script safely. An event id
// whose key holds an ordered event's marker (ordered.go) is refused with orderConflictReply, before
// any write. All keys share the event's shard tag.
//
// KEYS[1] -> {P:s}:evt:<event_id>      the event (fingerprint and body), stored once per event
// KEYS[2] -> {P:s}:ready
// KEYS[3] -> {P:s}:inline
// KEYS[3i+1], KEYS[3i+2], KEYS[3i+3] (i = 1..n) -> target i's delivery key, index key, queue key
// ARGV[1] -> now (ms)
// ARGV[2] -> retention (ms): the expiry of the record, and of the index entry
// ARGV[3] -> the event as stored: its fingerprint, then its body (event_store.go)
// ARGV[6i-2] .. ARGV[6i+3] (i = 1..n) -> target i's delivery id (its inline entry is the id followed
// by its webhook id), its hash (the id's last 12 bytes, raw), its new
// record, when it is due (ms), its webhook id, 1 if leased for an inline attempt (else 0)
// ARGV[3+6n+i] -> 1 if target i's index key's TTL is to be checked (else it was set lately: indexTTLs)
// KEYS[3n+4] -> {P:s}:tevents:<tenant>  the tenant's replay index in the shard (replay_index.go)
// ARGV[4+7n], ARGV[5+7n] -> replayOff, replayAdd or replayPrune; the event's id (unscoped)
// returns {claimConflict} when the event stored under this id has another fingerprint (nothing is
// written); else {event stored earlier or false, reply_1, ..., reply_n}: reply_i is claimCreated when
// this call created the delivery, or the existing record
var claimScript = redis.NewScript(indexFunction + `
local now, retention = tonumber(ARGV[1]), tonumber(ARGV[2])
local n = (#KEYS - 4) / 3
local stored = redis.call('GET', KEYS[1])
if stored and string.byte(stored, 1) == 0 then return redis.error_reply('` + orderConflictReply + `') end
if stored and string.byte(stored, 1) == 1 and string.sub(stored, 2, ` + strconv.Itoa(1+fingerprintLen) + `) ~= string.sub(ARGV[3], 2, ` + strconv.Itoa(1+fingerprintLen) + `) then
  return {` + strconv.Itoa(claimConflict) + `}
end
local reply, created = {false}, {}
local fresh = 0
for i = 1, n do
  -- The claim: the record is created only if the pair has none (the check and the write are one
  -- command); the existing record is returned otherwise.
  local rec = redis.call('SET', KEYS[3 * i + 1], ARGV[6 * i], 'NX', 'PX', retention, 'GET')
  if not rec then
    created[i], fresh = true, fresh + 1
  elseif rec == ARGV[6 * i] then
    reply[i + 1], fresh = ` + strconv.Itoa(claimCreated) + `, fresh + 1
  else
    reply[i + 1] = rec
  end
end
-- Index entries next; if one cannot be appended, the ones appended and the records created are
-- deleted again and nothing else is written.
local appended = {}
for i = 1, n do
  if created[i] then
    local ok, id = pcall(index, KEYS[3 * i + 2], now, retention, ARGV[6 * i - 1], now + retention, ARGV[3 + 6 * n + i] == '1')
    if not ok then
      for _, e in ipairs(appended) do redis.call('XDEL', e[1], e[2]) end
      for j = 1, n do if created[j] then redis.call('DEL', KEYS[3 * j + 1]) end end
      error(id)
    end
    appended[#appended + 1] = {KEYS[3 * i + 2], id}
  end
end
local replay = ARGV[4 + 7 * n]
local indexed = replay ~= '` + replayOff + `'
-- The replay index: one entry per event, written when its body is first stored.
if storeEvent(KEYS[1], stored, ARGV[3], retention, fresh > 0 or (indexed and not stored), reply) and indexed then
  redis.call('ZADD', KEYS[#KEYS], now, ARGV[5 + 7 * n])
end
if replay == '` + replayPrune + `' then
  redis.call('ZREMRANGEBYSCORE', KEYS[#KEYS], '-inf', '(' .. (now - retention))
  extend(KEYS[#KEYS], retention, math.floor(retention / 64))
end
for i = 1, n do
  if created[i] then
    local member, due, wid = ARGV[6 * i - 2], ARGV[6 * i + 1], ARGV[6 * i + 2]
    if ARGV[6 * i + 3] == '1' then
      redis.call('ZADD', KEYS[3], due, member .. wid)
    else
      redis.call('ZADD', KEYS[3 * i + 3], due, member)
      redis.call('ZADD', KEYS[2], 'LT', due, wid)
    end
    reply[i + 1] = ` + strconv.Itoa(claimCreated) + `
  end
end
return reply
`)

// claimCreated is claimScript's reply for a pair it created; claimConflict its whole reply for an
// event whose id names another event.
const (
	claimCreated  = 1
	claimConflict = 2
)

// indexFunction is the Lua function that adds a delivery to a webhook's per-shard index, a stream:
// index(key, now, retention, hash, expiry, ext) appends {d = hash, x = expiry (the record's, ms)} under
// the id <now>-<seq>, or after the stream's newest entry when that is later (another replica's clock
// is ahead: stream ids only grow), trims entries older than a retention (their records have expired,
// or were redelivered and indexed again), and keeps the key at least as long as its newest entry: with
// ext false (the caller knows it set the TTL within the last 1/64 of a retention: indexTTLs) it leaves
// the TTL as it is; else, when the TTL is shorter than a retention, it sets it to a retention and 1/64
// more (extend, luaExtend). It returns the entry's id, and raises an error, having written nothing, when key holds
// something other than a stream or Redis is older than 7.0 (no <ms>-* ids).
var indexFunction = luaExtend + `
local function index(key, now, retention, hash, expiry, ext)
  local minid = now - retention
  local id = redis.pcall('XADD', key, 'MINID', '~', minid, now .. '-*', 'd', hash, 'x', expiry)
  if type(id) == 'table' then
    local top = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
    if not top then error('webhooks: cannot append to ' .. key .. ': ' .. tostring(id.err)) end
    id = redis.call('XADD', key, 'MINID', '~', minid, string.match(top[1], '^%d+') .. '-*', 'd', hash, 'x', expiry)
  end
  if ext then extend(key, retention, math.floor(retention / 64)) end
  return id
end
` + luaStoreEvent

// luaStoreEvent is storeEvent(key, stored, value, retention, keep, reply): when keep (the claim created,
// or recognised as its own, at least one pair; or the replay index wants every event), the event is
// stored under key for a retention unless it was (stored: then reply[1] is it, and the key lives at
// least a retention more). It returns true when it stored the event now.
const luaStoreEvent = `
local function storeEvent(key, stored, value, retention, keep, reply)
  if not keep then return false end
  if stored then
    reply[1] = stored
    extend(key, retention, 0)
    return false
  end
  redis.call('SET', key, value, 'PX', retention)
  return true
end
`

// claim runs the claim script for new records of one event (its id scoped by its tenant) and returns its reply: {body stored
// earlier or nil, then per record claimCreated or the existing record}. A reply lost in transport is
// asked for again: the script recognises its own run and reports the pairs it created as created.
func (d *Dispatcher) claim(ctx context.Context, shard int, eventID, fingerprint string, body []byte, recs []*record, plans []targetPlan) ([]any, error) {
	keys := make([]string, 3, 4+3*len(recs))
	keys[0], keys[1], keys[2] = d.keys.eventKey(shard, eventID), d.keys.readyKey(shard), d.keys.inlineKey(shard)
	args := make([]any, 3, 5+7*len(recs))
	now := d.now()
	args[0], args[1], args[2] = now.UnixMilli(), d.opts.Retention.Milliseconds(), storedEvent(fingerprint, body)
	if len(recs) > 0 {
		args[0] = unixMilli(recs[0].CreatedAt)
	}
	checks := make([]any, len(recs))
	for i, r := range recs {
		index := d.keys.indexKey(shard, r.WebhookID)
		keys = append(keys, d.keys.deliveryKey(shard, r.ID), index, d.keys.queueKey(shard, r.WebhookID))
		args = append(args, r.ID, ks.IndexedHash(r.ID), r.encode(), plans[i].due.UnixMilli(), r.WebhookID, flag(plans[i].inline))
		checks[i] = flag(d.indexTTLs.due(index, now))
	}
	args = append(args, checks...)
	replayKey, mode, id := d.replayIndexArgs(shard, eventID, now)
	keys, args = append(keys, replayKey), append(args, mode, id)
	reply, err := d.runClaim(ctx, claimScript, eventID, len(recs), keys, args)
	if err != nil {
		return nil, err
	}
	for i, c := range checks {
		if c == 1 {
			d.indexTTLs.checked(keys[3+3*i+1], now)
		}
	}
	if mode == replayPrune {
		d.indexTTLs.checked(replayKey, now)
	}
	return reply, nil
}

// runClaim runs a claim script (claimScript, orderedClaimScript) for n targets, asking again for a
// reply lost in transport, and checks the reply. An id accepted before as another event gives an
// error wrapping ErrEventConflict, one reserved for an order key an error wrapping
// ErrOrderKeyConflict.
func (d *Dispatcher) runClaim(ctx context.Context, script *redis.Script, eventID string, n int, keys []string, args []any) ([]any, error) {
	w := d.writeAcked(ctx, script, keys, args...)
	reply, err := w.Slice()
	if err != nil && retryable(err) && ctx.Err() == nil {
		d.reloadOnTransport(err)
		w = d.writeAcked(ctx, script, keys, args...)
		reply, err = w.Slice()
	}
	if err != nil && strings.Contains(err.Error(), orderConflictReply) {
		err = fmt.Errorf("%w: it was dispatched with an order key", ErrOrderKeyConflict)
	}
	if err == nil && w.ackErr != nil {
		err = w.ackErr // kept, but not known to survive a failover: not accepted (ReplicaAcks)
	}
	if err == nil && len(reply) == 1 && reply[0] == int64(claimConflict) {
		return nil, fmt.Errorf("%w: %w: event %s was accepted before with another type or data", ErrInvalidEvent, ErrEventConflict, eventID)
	}
	if err == nil && len(reply) != 1+n {
		err = fmt.Errorf("unexpected reply of %d items", len(reply))
	}
	if err != nil {
		return nil, fmt.Errorf("webhooks: claim event %s: %w", eventID, err)
	}
	return reply, nil
}

// flag is a bool as a script argument: 1 or 0.
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

// indexTTLs remembers when this Dispatcher last had each index key's TTL checked, so that a claim
// checks it (PTTL, and PEXPIRE when short) once per 1/64 of a retention per key instead of on every
// append: an index key's TTL is set to a retention and 1/64 more, so it outlives every entry appended
// within that 1/64. A check is remembered only once the claim that made it has succeeded. Safe for
// concurrent use.
type indexTTLs struct {
	mu    sync.Mutex
	every time.Duration
	at    map[string]time.Time // index key -> when its TTL was last checked
}

func newIndexTTLs(retention time.Duration) *indexTTLs {
	return &indexTTLs{every: retention / 64, at: map[string]time.Time{}}
}

// due reports whether key's TTL is to be checked at now.
func (x *indexTTLs) due(key string, now time.Time) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	at, ok := x.at[key]
	return !ok || now.Sub(at) >= x.every || now.Before(at)
}

// checked remembers that key's TTL was checked at now.
func (x *indexTTLs) checked(key string, now time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.at) > 100_000 { // mostly keys no longer written; the others are checked again
		clear(x.at)
	}
	x.at[key] = now
}
