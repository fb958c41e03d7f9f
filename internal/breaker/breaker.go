// Package breaker is the webhooks' circuit breaker: the rule that opens, probes and closes a webhook's
// circuit, and its state. A circuit is stored in Redis (one field of the circuits hash, written by
// rdb.Count, rdb.AcquireProbe and rdb.ReleaseProbe) and shared by every replica; each process keeps the
// circuits it read or changed for CacheTTL. A Breaker owns the store and that cache; the root calls it
// to read circuits, take and give back probes, and count attempts' outcomes, and runs what follows
// (hooks, operational events, disabling a webhook) itself.
package breaker

import (
	"context"
	"log/slog"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"

	"github.com/redis/go-redis/v9"
)

// Config is what a Breaker needs: its Redis, its keyspace and its settings.
type Config struct {
	Client     redis.UniversalClient // the Redis holding the circuits
	Keys       rdb.Keys              // the keyspace: its circuits hash and hourly counters
	BreakAfter int                   // failures in a row that open a circuit; < 0: the breaker is off (counts still run)
	BreakFor   time.Duration         // the first open period
	ProbeHold  time.Duration         // how long a probe taken is held for its one attempt; an attempt open longer holds no failure's count back (Sends)
	Now        func() time.Time      // the clock (nil: time.Now)
	Log        *slog.Logger          // where warnings go (nil: nowhere)
}

// Breaker is the circuit breaker of one Dispatcher: the circuits in Redis and this process's cache of
// them. Safe for concurrent use; make it with New.
type Breaker struct {
	store      *store
	cache      *cache
	sends      *Sends
	breakAfter int
	breakFor   time.Duration
	probeHold  time.Duration
	now        func() time.Time
	log        *slog.Logger
}

// New returns the Breaker of c. It does no I/O.
func New(c Config) *Breaker {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return &Breaker{store: newStore(c.Client, c.Keys), cache: newCache(), sends: NewSends(c.ProbeHold, c.Now),
		breakAfter: c.BreakAfter, breakFor: c.BreakFor, probeHold: c.ProbeHold, now: c.Now, log: c.Log}
}

// Sends is this process's attempts between their sends and their counts, which order its counts.
func (b *Breaker) Sends() *Sends { return b.sends }

// Circuit returns a webhook's circuit as this process sees it: cached for up to CacheTTL, read from
// Redis on a miss. When the breaker is off, or its state cannot be read, the circuit is closed.
func (b *Breaker) Circuit(ctx context.Context, webhookID string) types.Health {
	return b.Circuits(ctx, []string{webhookID})[0]
}

// Circuits is Circuit for several webhooks, in ids' order, with at most one read of Redis.
func (b *Breaker) Circuits(ctx context.Context, ids []string) []types.Health {
	var out []types.Health
	if b.breakAfter >= 0 && len(ids) > 0 {
		var err error
		if out, err = b.cache.get(ctx, b.store, b.now(), ids); err != nil {
			b.log.Warn("webhooks: read circuits", "error", err)
		}
	}
	if out == nil {
		out = make([]types.Health, len(ids))
	}
	for i, id := range ids {
		if out[i].State == "" {
			out[i] = types.Health{WebhookID: id, State: types.CircuitClosed}
		}
	}
	return out
}

// Cached returns the circuits of ids cached within CacheTTL, in ids' order, without reading Redis:
// what Enqueue knows for free. A webhook not cached has a zero Health: it is not known to be open.
func (b *Breaker) Cached(now time.Time, ids []string) []types.Health {
	return b.cache.peek(now, ids)
}

// Put caches h as of now, so this process sees at once the state it changed.
func (b *Breaker) Put(h types.Health, now time.Time) { b.cache.put(h, now) }

// FailingNow reports whether webhookID's circuit, as this process last saw it (within CacheTTL), holds
// failures or is open. Then an inline attempt's count goes out as it ends, on the count lane, not with
// its outcome's write: its successes reach the circuit in the same lane and order as the worker's
// attempts' counts, where a success that waits behind other outcome writes could let failures
// answered after it be counted as a run. A healthy webhook's count still rides with the outcome's
// write, at no round trip of its own.
func (b *Breaker) FailingNow(webhookID string) bool {
	h, ok := b.cache.lookup(b.now(), webhookID)
	return ok && (h.ConsecutiveFailures > 0 || h.State != types.CircuitClosed)
}

// Read returns the circuits of webhookIDs at now from Redis, in one HMGET; one not stored is closed,
// 0 failures.
func (b *Breaker) Read(ctx context.Context, now time.Time, webhookIDs ...string) (map[string]types.Health, error) {
	return b.store.read(ctx, now, webhookIDs...)
}

// Forget deletes webhookID's circuit (for a webhook deleted while failing).
func (b *Breaker) Forget(ctx context.Context, webhookID string) error {
	return b.store.forget(ctx, webhookID)
}

// TryProbe takes the probe of an open circuit h whose open period has ended, held for the Breaker's
// ProbeHold, and returns its token: the caller may send one attempt, and counts its outcome with it.
func (b *Breaker) TryProbe(ctx context.Context, webhookID string, now time.Time, h types.Health) (token string, ok bool) {
	if now.Before(h.OpenUntil) {
		return "", false
	}
	token = rdb.NewToken()
	ok, got, err := b.store.acquireProbe(ctx, webhookID, now, token, b.probeHold)
	if err != nil {
		b.log.Warn("webhooks: take circuit probe", "webhook_id", webhookID, "error", err)
		return "", false
	}
	b.cache.put(got, now)
	return token, ok
}

// ReleaseProbe gives back a webhook's probe under token that sent nothing (rdb.ReleaseProbe): the next
// pass may take it at once, instead of a ProbeHold later. The cached circuit is dropped either way.
func (b *Breaker) ReleaseProbe(ctx context.Context, webhookID, token string) error {
	defer b.cache.forget(webhookID)
	return b.store.releaseProbe(ctx, webhookID, token)
}
