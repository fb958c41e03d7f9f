package webhooks

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/rdb"
)

// StatsWebhooksPerShard bounds how many webhooks Stats examines in each shard: those whose earliest
// delivery there is due first (the head of the shard's ready zset). A shard with more webhooks queued
// is reported Truncated, and its counts are lower bounds.
const StatsWebhooksPerShard = 64

// StatsLeasesPerShard bounds how many deliveries Stats inspects in each shard to tell the leased ones
// (an attempt in flight) from those merely scheduled within the next lease. Beyond it the shard is
// reported Truncated and the rest count as scheduled.
const StatsLeasesPerShard = 256

// Stats is a snapshot of the delivery backlog, as Dispatcher.Stats reads it. Counts are of pending
// deliveries; a delivery that succeeded or failed for good is in none of them.
type Stats struct {
	// At is when the snapshot was taken (the Dispatcher's clock).
	At time.Time
	// Due is how many deliveries are due now and not leased: waiting for a worker. A delivery whose
	// lease expired (its worker died) is due again.
	Due int64
	// Scheduled is how many deliveries wait for a later time: a retry, or a probe of their webhook's
	// open circuit.
	Scheduled int64
	// Leased is how many deliveries a worker (or Dispatch, inline) holds the lease of: in flight.
	Leased int64
	// OldestDueAt is when the oldest delivery due became due (for one whose lease expired, when its
	// lease ended); zero when nothing is due.
	OldestDueAt time.Time
	// OldestDueAge is At - OldestDueAt, in whole milliseconds, 0 when nothing is due: how far behind
	// the workers are.
	OldestDueAge time.Duration
	// Webhooks is how many (webhook, shard) queues hold pending deliveries.
	Webhooks int64
	// OpenCircuits is how many webhooks have an open circuit (including those probing).
	OpenCircuits int
	// BlockedKeys is how many (webhook, order key) sequences have deliveries waiting behind their
	// head (Event.OrderKey): keys whose head is in flight, retrying, parked, or failed and holding
	// its key (Options.BlockKeyOnFailure).
	BlockedKeys int64
	// Truncated is set when a shard had more to examine than the bounds allow (StatsWebhooksPerShard,
	// StatsLeasesPerShard): the counts are then lower bounds (Leased may be counted as Scheduled).
	Truncated bool
	// Shards are the same figures per event shard, in shard order.
	Shards []ShardStats
}

// ShardStats are the backlog figures of one event shard.
type ShardStats struct {
	Shard       int
	Due         int64
	Scheduled   int64
	Leased      int64
	OldestDueAt time.Time
	// Webhooks is how many webhooks have deliveries queued in the shard (of those beyond the ones
	// examined, an upper bound: a ready entry outlives its emptied queue until a worker reads it);
	// Examined how many of its ready entries Stats read (at most StatsWebhooksPerShard).
	Webhooks, Examined int64
	Truncated          bool
}

// Stats reads a snapshot of the delivery backlog across all shards: deliveries due now, scheduled
// later and leased (in flight), the age of the oldest due delivery, and the open circuits, in total
// and per shard. It writes nothing.
//
// Its cost does not grow with the backlog. It makes at most three pipelined round trips, of at most
// 5×Shards+1, Shards and Shards commands (twice as many scripts' commands on a server that lost the scripts):
//
//  1. per shard ZCARD and ZRANGE of the ready zset (the first StatsWebhooksPerShard webhooks), ZCARD,
//     ZCOUNT and the head of the inline zset (inline attempts: leased, or due once their lease ended),
//     and one HGETALL of the circuits hash (O(webhooks with failures), not of deliveries);
//  2. per shard one read-only script over the queues of the webhooks read: per queue ZCARD, two
//     ZCOUNTs, a ZRANGE of its head and at most StatsLeasesPerShard ids in all (O(log n) each);
//  3. per shard one read-only script reading the lease byte of those ids' records (GETRANGE).
//
// So Redis does O(Shards × (StatsWebhooksPerShard × log n + StatsLeasesPerShard)) work: cheap enough to
// scrape every few seconds. Beyond the bounds the figures are lower bounds and Truncated says so. It
// is a snapshot, not a transaction: deliveries that move while it reads may be counted twice or not at
// all. A lease taken by a replica whose Options.Timeout is longer than this Dispatcher's may end
// beyond the window it inspects, and then counts as scheduled.
func (d *Dispatcher) Stats(ctx context.Context) (*Stats, error) {
	if err := loadKeys(ctx, d.keys, d.rdb); err != nil {
		return nil, err
	}
	now := d.now()
	st := &Stats{At: now, Shards: make([]ShardStats, d.keys.Shards)}
	heads, err := d.statsReady(ctx, now, st)
	if err != nil {
		return nil, err
	}
	leases, err := d.statsQueues(ctx, now, st, heads)
	if err != nil {
		return nil, err
	}
	if err := d.statsLeases(ctx, st, leases); err != nil {
		return nil, err
	}
	st.total(now)
	return st, nil
}

// statsReady reads, in one round trip, the ready zsets (their size and first webhooks), the inline
// zsets and the circuits (rdb.ReadSchedules); it fills each shard's webhook counts, inline attempts and
// the open circuits, and returns each shard's webhooks examined.
func (d *Dispatcher) statsReady(ctx context.Context, now time.Time, st *Stats) ([][]string, error) {
	schedules, circuits, err := rdb.ReadSchedules(ctx, d.rdb, d.keys, now, StatsWebhooksPerShard)
	if err != nil {
		return nil, err
	}
	for id, v := range circuits {
		if h := breaker.HealthOf(id, v, now); h.State != CircuitClosed {
			st.OpenCircuits++
		}
	}
	out := make([][]string, d.keys.Shards)
	for s, sc := range schedules {
		sh := &st.Shards[s]
		out[s] = sc.Heads
		sh.Shard, sh.Webhooks, sh.Examined = s, sc.Webhooks, int64(len(out[s]))
		sh.Truncated = sh.Webhooks > sh.Examined
		st.BlockedKeys += sc.BlockedKeys
		// The inline attempts (internal/worker/leaser_inline.go): leased, or due when the lease has ended (no outcome came: a
		// worker takes it over), the oldest of those due since its lease's end.
		sh.Leased += sc.InlineAll - sc.InlineEnded
		sh.Due += sc.InlineEnded
		if sc.InlineEnded > 0 && !sc.InlineFirst.IsZero() {
			sh.OldestDueAt = sc.InlineFirst
		}
	}
	return out, nil
}

// statsQueues reads the queues of the webhooks examined (rdb.ReadQueueStats) and fills each shard's
// due, scheduled and oldest due; it returns, per shard, the deliveries whose score lies within a lease
// from now, whose leases statsLeases reads.
func (d *Dispatcher) statsQueues(ctx context.Context, now time.Time, st *Stats, heads [][]string) ([][]string, error) {
	queues, err := rdb.ReadQueueStats(ctx, d.rdb, d.keys, now, now.Add(d.lease), heads, StatsLeasesPerShard)
	if err != nil {
		return nil, err
	}
	window := make([][]string, d.keys.Shards)
	for _, q := range queues {
		sh := &st.Shards[q.Shard]
		sh.Due, sh.Scheduled = sh.Due+q.Due, sh.Scheduled+q.Total-q.Due
		// A ready entry is left behind a queue that emptied until a worker reads it (internal/worker/leaser.go):
		// the queues examined count only when they hold a delivery.
		sh.Webhooks -= sh.Examined - q.Held
		if !q.OldestDue.IsZero() && (sh.OldestDueAt.IsZero() || q.OldestDue.Before(sh.OldestDueAt)) {
			sh.OldestDueAt = q.OldestDue
		}
		sh.Truncated = sh.Truncated || q.InWindow > int64(len(q.Window))
		window[q.Shard] = q.Window
	}
	return window, nil
}

// statsLeases reads which of the deliveries in the lease window are leased (rdb.CountLeased).
func (d *Dispatcher) statsLeases(ctx context.Context, st *Stats, window [][]string) error {
	leased, err := rdb.CountLeased(ctx, d.rdb, d.keys, window)
	if err != nil {
		return err
	}
	for s, n := range leased {
		sh := &st.Shards[s]
		sh.Leased, sh.Scheduled = sh.Leased+n, sh.Scheduled-n
	}
	return nil
}

// total sums the shards into the totals.
func (st *Stats) total(now time.Time) {
	for _, sh := range st.Shards {
		st.Due += sh.Due
		st.Scheduled += sh.Scheduled
		st.Leased += sh.Leased
		st.Webhooks += sh.Webhooks
		st.Truncated = st.Truncated || sh.Truncated
		if !sh.OldestDueAt.IsZero() && (st.OldestDueAt.IsZero() || sh.OldestDueAt.Before(st.OldestDueAt)) {
			st.OldestDueAt = sh.OldestDueAt
		}
	}
	if !st.OldestDueAt.IsZero() {
		st.OldestDueAge = max(time.Duration(now.UnixMilli()-st.OldestDueAt.UnixMilli())*time.Millisecond, 0)
	}
}
