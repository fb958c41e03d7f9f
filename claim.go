package webhooks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/replay"

	"github.com/redis/go-redis/v9"
)

// claim runs the claim script for new records of one event (its id scoped by its tenant) and returns its reply: {body stored
// earlier or nil, then per record rdb.ClaimCreated or the existing record}. A reply lost in transport is
// asked for again: the script recognises its own run and reports the pairs it created as created.
func (d *Dispatcher) claim(ctx context.Context, shard int, eventID, fingerprint string, body []byte, recs []*rdb.Record, plans []targetPlan) ([]any, error) {
	keys := make([]string, 3, 5+3*len(recs))
	keys[0], keys[1], keys[2] = d.keys.Event(shard, eventID), d.keys.Ready(shard), d.keys.Inline(shard)
	args := make([]any, 3, 9+7*len(recs)) // 3, 6 per record, its check, then 6
	now := d.now()
	args[0], args[1], args[2] = now.UnixMilli(), recordRetention(recs, d.opts.Retention).Milliseconds(), rdb.StoredEvent(fingerprint, body)
	if len(recs) > 0 {
		args[0] = rdb.UnixMilli(recs[0].CreatedAt)
	}
	checks := make([]any, len(recs))
	for i, r := range recs {
		index := d.keys.Index(shard, r.WebhookID)
		keys = append(keys, d.keys.Delivery(shard, r.ID), index, d.keys.Queue(shard, r.WebhookID))
		args = append(args, r.ID, rdb.IndexedHash(r.ID), r.Encode(), plans[i].due.UnixMilli(), r.WebhookID, flag(plans[i].inline))
		checks[i] = flag(d.indexTTLs.due(index, now))
	}
	args = append(args, checks...)
	pruneDue := func(key string) bool { return d.indexTTLs.due(key, now) }
	replayKey, mode, id := replay.IndexArgs(d.keys, d.opts.ReplayIndex, shard, eventID, pruneDue)
	tenantKey, tenantMode := d.tenantIndexArgs(shard, eventID, now)
	keys, args = append(keys, replayKey, tenantKey), append(args, mode, id, tenantMode, d.opts.Retention.Milliseconds(), d.leaser.WakeDelay(),
		d.opts.payloadTTL(recordRetention(recs, d.opts.Retention)).Milliseconds())
	reply, err := d.runClaim(ctx, rdb.Claim, eventID, len(recs), keys, args)
	if err != nil {
		return nil, err
	}
	d.tenantIndexChecked(tenantKey, tenantMode, reply, now)
	for i, c := range checks {
		if c == 1 && createdBy(reply[1+i]) { // a duplicate's claim wrote, and checked, nothing
			d.indexTTLs.checked(keys[3+3*i+1], now)
		}
	}
	if mode == rdb.ReplayPrune {
		d.indexTTLs.checked(replayKey, now)
	}
	return reply, nil
}

// tenantIndexArgs are a claim script's tenant index key (Keys.TenantIndex) and mode for an event (its
// id scoped by its tenant): "" when the event has no tenant (the key is not written), else 1 when the
// key's TTL is to be checked (indexTTLs), else 0.
func (d *Dispatcher) tenantIndexArgs(shard int, scoped string, now time.Time) (string, any) {
	tenant, _ := rdb.SplitScopedEventID(scoped)
	key := d.keys.TenantIndex(shard, tenant)
	if tenant == "" {
		return key, ""
	}
	return key, flag(d.indexTTLs.due(key, now))
}

// tenantIndexChecked remembers that a claim checked its tenant index key's TTL: it did when the mode
// asked it to and the claim created a delivery (reply, runClaim's).
func (d *Dispatcher) tenantIndexChecked(key string, mode any, reply []any, now time.Time) {
	if mode == 1 && slices.ContainsFunc(reply[1:], createdBy) {
		d.indexTTLs.checked(key, now)
	}
}

// createdBy reports whether a claim's reply item says the claim created its pair (rdb.ClaimCreated, or
// rdb.ClaimWaiting for an ordered pair behind its key's head): only then did it write, and check the
// TTL of, the pair's index keys.
func createdBy(item any) bool {
	return item == any(int64(rdb.ClaimCreated)) || item == any(int64(rdb.ClaimWaiting))
}

// runClaim runs a claim script (rdb.Claim, rdb.OrderedClaim) for n targets, asking again for a
// reply lost in transport, and checks the reply. An id accepted before as another event gives an
// error wrapping ErrEventConflict, one reserved for an order key an error wrapping
// ErrOrderKeyConflict.
func (d *Dispatcher) runClaim(ctx context.Context, script *redis.Script, eventID string, n int, keys []string, args []any) ([]any, error) {
	w := d.writeAcked(ctx, script, keys, args...)
	reply, err := w.Slice()
	if err != nil && rdb.Retryable(err) && ctx.Err() == nil {
		rdb.ReloadOnTransport(d.rdb, err)
		w = d.writeAcked(ctx, script, keys, args...)
		reply, err = w.Slice()
	}
	if err != nil && strings.Contains(err.Error(), rdb.OrderConflictReply) {
		err = fmt.Errorf("%w: it was dispatched with an order key", ErrOrderKeyConflict)
	}
	if err == nil && w.AckErr != nil {
		err = w.AckErr // kept, but not known to survive a failover: not accepted (ReplicaAcks)
	}
	if err == nil && len(reply) == 1 && reply[0] == int64(rdb.ClaimConflict) {
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
// within that 1/64. A check is remembered only once the claim that made it has succeeded. It only ever
// spares the extension of a key that has a TTL: a stream the script creates (the key expired, was
// evicted or deleted since) gets its TTL whatever this remembers (lib/index.lua), and the replay index's
// TTL is checked with every entry; here it decides only when that index is pruned
// (TestEveryKeyExpiresWhenWrittenAgain). Safe for concurrent use.
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

// recordRetention is how long the records of a claim are kept (their expiry less their creation: a test
// send's are kept less long), or def for a claim of no record.
func recordRetention(recs []*rdb.Record, def time.Duration) time.Duration {
	if len(recs) == 0 {
		return def
	}
	return recs[0].ExpiresAt.Sub(recs[0].CreatedAt)
}
