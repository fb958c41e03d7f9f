package webhooks

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// How an outcome of settle moves its delivery's sequence when it is final (orderedOutcomeScript).
const (
	orderNone      = "0" // an unordered delivery
	orderOnSuccess = "1" // the next goes on after a success only: a failure blocks the key (BlockKeyOnFailure)
	orderOnFinal   = "2" // the next goes on after a success or a failure for good
)

// orderedOutcomeScript is outcomeScript for a call with outcomes of ordered deliveries: when a head's
// outcome is final and its mode lets the key go on, it pops the head off its sequence and queues
// the next one, due at once (promote), in the same step, lowering the webhook's ready score to now. A head
// that failed with mode orderOnSuccess stays the head, and stays in its queue at now + retention
// (after its record's expiry, when the lease script drops it: the queue holds every live head, see
// orderedClaimScript): its key waits until Redeliver resets it.
//
// KEYS[1] .. KEYS[2+2n] -> as outcomeScript's
// KEYS[2+2n+i] (i = 1..n) -> outcome i's sequence key (its queue key for an unordered delivery: not read)
// KEYS[3+3n] -> {P:s}:blocked
// ARGV[1] .. ARGV[1+7n] -> as outcomeScript's
// ARGV[1+7n+i] -> outcome i's mode: orderNone, orderOnSuccess or orderOnFinal
// ARGV[1+8n+i] -> outcome i's blocked zset member
// ARGV[2+9n] -> retention (ms)
// returns outcomeScript's reply, then how many deliveries it queued (promoted)
var orderedOutcomeScript = redis.NewScript(luaPromote + `
local promoted = 0
local function outcomeCount() return (#KEYS - 3) / 3 end
local function final(i, status)
  local n = outcomeCount()
  local mode, seq = ARGV[1 + 7 * n + i], KEYS[2 + 2 * n + i]
  local id, wid = ARGV[2 + 6 * (i - 1)], ARGV[6 + 6 * (i - 1)]
  if mode == '` + orderNone + `' or redis.call('LINDEX', seq, 0) ~= id then return end
  local now, queue = tonumber(ARGV[1]), KEYS[2 * i + 2]
  if status ~= 'success' and mode ~= '` + orderOnFinal + `' then
    local until_ = now + tonumber(ARGV[#ARGV])
    redis.call('ZADD', queue, until_, id)
    redis.call('ZADD', KEYS[1], 'LT', until_, wid)
    return
  end
  if promote(seq, queue, KEYS[#KEYS], ARGV[1 + 8 * n + i], now) then
    redis.call('ZADD', KEYS[1], 'LT', now, wid)
    promoted = promoted + 1
  end
end
local function finish(reply)
  reply[#reply + 1] = promoted
  return reply
end
` + outcomeBody)

// outcomeScriptFor returns the script that records the outcomes idx of recs, given outcomeScript's
// keys and its records' arguments, with its keys and those arguments, and how many reply items it
// gives beyond one per outcome: outcomeScript's (0), or orderedOutcomeScript's when one of them is of
// an ordered delivery (1: how many deliveries it queued).
func (d *Dispatcher) outcomeScriptFor(shard int, recs []*record, idx []int, keys []string, values []any) (*redis.Script, []string, []any, int) {
	ordered := false
	for _, i := range idx {
		ordered = ordered || recs[i].OrderKey != ""
	}
	if !ordered {
		return outcomeScript, keys, values, 0
	}
	seqKeys, seqArgs := d.orderedOutcomes(shard, recs, idx)
	return orderedOutcomeScript, append(keys, seqKeys...), append(values, seqArgs...), 1
}

// orderedOutcomes returns the keys and arguments orderedOutcomeScript takes beyond outcomeScript's
// for the outcomes idx of recs.
func (d *Dispatcher) orderedOutcomes(shard int, recs []*record, idx []int) ([]string, []any) {
	mode := orderOnFinal
	if d.opts.BlockKeyOnFailure {
		mode = orderOnSuccess
	}
	keys := make([]string, 0, len(idx)+1)
	modes, members := make([]any, 0, 2*len(idx)+1), make([]any, 0, len(idx))
	for _, i := range idx {
		r := recs[i]
		if r.OrderKey == "" {
			keys, modes, members = append(keys, d.keys.queueKey(shard, r.WebhookID)), append(modes, orderNone), append(members, "")
			continue
		}
		keys = append(keys, d.keys.seqKey(shard, r.WebhookID, r.OrderKey))
		modes, members = append(modes, mode), append(members, blockedMember(r.WebhookID, r.OrderKey))
	}
	return append(keys, d.keys.blockedKey(shard)), append(append(modes, members...), d.opts.Retention.Milliseconds())
}

// orderedRedeliverScript is redeliverScript for an ordered delivery: the reset delivery goes to the
// end of its key's sequence (it stays where it is when it is still the head: a key blocked by its
// failure, BlockKeyOnFailure). Only as the head is it leased and queued for the attempt Redeliver
// makes; behind others it is reset waiting (not leased, not queued), and its sequence joins the
// blocked zset. A lost head found first is popped, as the claim does.
//
// KEYS[1] .. KEYS[5] -> as redeliverScript's (KEYS[3]: {P:s}:oevt:<event_id>)
// KEYS[6] -> {P:s}:seq:<webhook_id>:<order_key>
// KEYS[7] -> {P:s}:blocked
// KEYS[8] -> {P:s}:inline
// ARGV[1] .. ARGV[10] -> as redeliverScript's
// ARGV[11] -> the reset record as waiting
// ARGV[12] -> the sequence's blocked zset member
// returns as redeliverScript, or {redeliverWaiting, false, record} when reset behind its key's head
var orderedRedeliverScript = redis.NewScript(indexFunction + luaLeaseOf + luaPromote + `
local rec = redis.call('GET', KEYS[1])
if not rec then return {} end
if leaseOf(KEYS[1], ARGV[5]) == ` + luaHeld + ` then
  return {` + strconv.Itoa(redeliverReset) + `, redis.call('GET', KEYS[3]), rec}
end
if rec == ARGV[11] then return {` + strconv.Itoa(redeliverWaiting) + `, false, rec} end
if rec ~= ARGV[6] then return {` + strconv.Itoa(redeliverUnchanged) + `, false, rec} end
local now, retention = tonumber(ARGV[1]), tonumber(ARGV[2])
index(KEYS[4], now, retention, ARGV[8], ARGV[9], true)
extend(KEYS[3], retention, 0)
local first = redis.call('LINDEX', KEYS[6], 0)
if first and first ~= ARGV[4] and not redis.call('ZSCORE', KEYS[5], first)
    and not redis.call('ZSCORE', KEYS[8], first .. ARGV[10]) then
  promote(KEYS[6], KEYS[5], KEYS[7], ARGV[12], now) -- a lost head (orderedClaimScript)
  redis.call('ZADD', KEYS[2], 'LT', now, ARGV[10])
  first = redis.call('LINDEX', KEYS[6], 0)
end
local head = first == ARGV[4] or redis.call('RPUSH', KEYS[6], ARGV[4]) == 1
extend(KEYS[6], retention, math.floor(retention / 64))
if not head then
  redis.call('SET', KEYS[1], ARGV[11], 'PX', retention)
  redis.call('ZADD', KEYS[7], now + retention, ARGV[12])
  return {` + strconv.Itoa(redeliverWaiting) + `, false, ARGV[11]}
end
redis.call('SET', KEYS[1], ARGV[7], 'PX', retention)
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[4])
redis.call('ZADD', KEYS[2], 'LT', ARGV[3], ARGV[10])
return {` + strconv.Itoa(redeliverReset) + `, redis.call('GET', KEYS[3]), ARGV[7]}
`)

// redeliverScriptFor returns the script, keys and arguments that reset rec (redeliverScript's keys
// and arguments given): orderedRedeliverScript's for an ordered delivery, redeliverScript's for
// another.
func (d *Dispatcher) redeliverScriptFor(shard int, wh *storedWebhook, rec *record, renewed *record, keys []string, args []any) (*redis.Script, []string, []any) {
	if rec.OrderKey == "" {
		return redeliverScript, keys, args
	}
	keys[2] = d.keys.orderedEventKey(shard, scopedEventID(wh.Tenant, rec.EventID))
	keys = append(keys, d.keys.seqKey(shard, rec.WebhookID, rec.OrderKey), d.keys.blockedKey(shard), d.keys.inlineKey(shard))
	args = append(args, waitingRecord(renewed).encode(), blockedMember(rec.WebhookID, rec.OrderKey))
	return orderedRedeliverScript, keys, args
}

// redeliveredBehind is Redeliver's error for a delivery the redeliver script did not reset for an
// attempt now: nil when it did not reset it at all, else (an ordered delivery reset behind its key's
// head, redeliverWaiting) one wrapping ErrDeferred, once the event's marker is extended as the
// reset extended its record.
func (d *Dispatcher) redeliveredBehind(ctx context.Context, tenant string, rec *record, reset int64) error {
	if reset != redeliverWaiting {
		return nil
	}
	d.extendOrderMarker(ctx, tenant, rec)
	return fmt.Errorf("webhooks: redeliver %s: queued behind earlier deliveries of order key %q: %w", rec.ID, rec.OrderKey, ErrDeferred)
}

// extendOrderMarker keeps an ordered event's marker at least as long as its records once one was
// redelivered (best effort: a marker that expires early only lets the id be dispatched again with
// another key).
func (d *Dispatcher) extendOrderMarker(ctx context.Context, tenant string, rec *record) {
	if rec.OrderKey == "" {
		return
	}
	scoped := scopedEventID(tenant, rec.EventID)
	ttl := (d.opts.Retention + markerSlack).Milliseconds()
	if err := d.rdb.Do(ctx, "PEXPIRE", d.keys.eventKey(d.keys.ShardOf(scoped), scoped), ttl, "GT").Err(); err != nil {
		d.log.Warn("webhooks: extend order marker", "delivery_id", rec.ID, "error", err)
	}
}
