package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
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

// statsReady reads, in one round trip, the ready zsets (their size and first webhooks) and the
// circuits; it fills each shard's webhook counts and the open circuits, and returns each shard's
// webhooks examined.
func (d *Dispatcher) statsReady(ctx context.Context, now time.Time, st *Stats) ([][]string, error) {
	pipe := d.rdb.Pipeline()
	cards := make([]*redis.IntCmd, d.keys.Shards)
	heads := make([]*redis.StringSliceCmd, d.keys.Shards)
	blocked := make([]*redis.IntCmd, d.keys.Shards)
	inline := make([]inlineStats, d.keys.Shards)
	for s := range d.keys.Shards {
		blocked[s] = pipe.ZCount(ctx, d.keys.Blocked(s), strconv.FormatInt(now.UnixMilli(), 10), "+inf")
		cards[s] = pipe.ZCard(ctx, d.keys.Ready(s))
		heads[s] = pipe.ZRange(ctx, d.keys.Ready(s), 0, StatsWebhooksPerShard-1)
		inline[s] = inlineStats{all: pipe.ZCard(ctx, d.keys.Inline(s)),
			ended: pipe.ZCount(ctx, d.keys.Inline(s), "-inf", strconv.FormatInt(now.UnixMilli(), 10)),
			first: pipe.ZRangeWithScores(ctx, d.keys.Inline(s), 0, 0)}
	}
	circuits := pipe.HGetAll(ctx, d.keys.Circuits())
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("webhooks: stats: read schedules: %w", err)
	}
	for id, v := range circuits.Val() {
		if h := breaker.HealthOf(id, v, now); h.State != CircuitClosed {
			st.OpenCircuits++
		}
	}
	out := make([][]string, d.keys.Shards)
	for s := range d.keys.Shards {
		sh := &st.Shards[s]
		out[s] = heads[s].Val()
		sh.Shard, sh.Webhooks, sh.Examined = s, cards[s].Val(), int64(len(out[s]))
		sh.Truncated = sh.Webhooks > sh.Examined
		st.BlockedKeys += blocked[s].Val()
		inline[s].count(sh)
	}
	return out, nil
}

// inlineStats reads a shard's inline zset: the deliveries leased for an inline attempt (inline.go).
type inlineStats struct {
	all, ended *redis.IntCmd
	first      *redis.ZSliceCmd
}

// count adds the shard's inline attempts to its figures: leased, or due when the lease has ended (no
// outcome came: a worker takes it over), the oldest of those due since its lease's end.
func (c inlineStats) count(sh *ShardStats) {
	sh.Leased += c.all.Val() - c.ended.Val()
	sh.Due += c.ended.Val()
	if first := c.first.Val(); c.ended.Val() > 0 && len(first) == 1 {
		sh.OldestDueAt = rdb.MilliTime(int64(first[0].Score))
	}
}

// statsQueues reads the queues of the webhooks examined, one script per shard, and fills each shard's
// due, scheduled and oldest due; it returns the lease reads to make, of the deliveries whose score lies
// within a lease from now.
func (d *Dispatcher) statsQueues(ctx context.Context, now time.Time, st *Stats, heads [][]string) ([]statsCall, error) {
	var calls []statsCall
	for s, ids := range heads {
		if len(ids) == 0 {
			continue
		}
		keys := make([]string, len(ids))
		for i, id := range ids {
			keys[i] = d.keys.Queue(s, id)
		}
		calls = append(calls, statsCall{shard: s, script: rdb.StatsQueues, keys: keys,
			args: []any{now.UnixMilli(), now.Add(d.lease).UnixMilli(), StatsLeasesPerShard}})
	}
	if err := d.evalAll(ctx, calls); err != nil {
		return nil, fmt.Errorf("webhooks: stats: read queues: %w", err)
	}
	var leases []statsCall
	for _, c := range calls {
		reply, err := c.cmd.Slice()
		if err == nil && len(reply) < 5 {
			err = fmt.Errorf("unexpected reply of %d items", len(reply))
		}
		if err != nil {
			return nil, fmt.Errorf("webhooks: stats: shard %d: %w", c.shard, err)
		}
		sh := &st.Shards[c.shard]
		due, _ := reply[0].(int64)
		total, _ := reply[1].(int64)
		oldest, _ := reply[2].(int64)
		inWindow, _ := reply[3].(int64)
		held, _ := reply[4].(int64)
		sh.Due, sh.Scheduled = sh.Due+due, sh.Scheduled+total-due
		// A ready entry is left behind a queue that emptied until a worker reads it (schedule.go):
		// the queues examined count only when they hold a delivery.
		sh.Webhooks -= sh.Examined - held
		if oldest > 0 && (sh.OldestDueAt.IsZero() || oldest < sh.OldestDueAt.UnixMilli()) {
			sh.OldestDueAt = rdb.MilliTime(oldest)
		}
		if len(reply) == 5 {
			continue
		}
		keys := make([]string, 0, len(reply)-5)
		for _, item := range reply[5:] {
			id, _ := item.(string)
			keys = append(keys, d.keys.Delivery(c.shard, id))
		}
		sh.Truncated = sh.Truncated || inWindow > int64(len(keys))
		leases = append(leases, statsCall{shard: c.shard, script: rdb.StatsLeases, keys: keys})
	}
	return leases, nil
}

// statsLeases reads which of the deliveries in the lease window are leased, one script per shard.
func (d *Dispatcher) statsLeases(ctx context.Context, st *Stats, leases []statsCall) error {
	if err := d.evalAll(ctx, leases); err != nil {
		return fmt.Errorf("webhooks: stats: read leases: %w", err)
	}
	for _, c := range leases {
		n, err := c.cmd.Int64()
		if err != nil {
			return fmt.Errorf("webhooks: stats: shard %d: %w", c.shard, err)
		}
		sh := &st.Shards[c.shard]
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

// statsCall is one script run of Stats.
type statsCall struct {
	shard  int
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
}

// evalAll runs the calls in one pipeline of EVALSHA, and those the server lacks the script of in a
// second one of EVAL. It returns an error only when a call has none of its own.
func (d *Dispatcher) evalAll(ctx context.Context, calls []statsCall) error {
	if len(calls) == 0 {
		return nil
	}
	pipe := d.rdb.Pipeline()
	for i := range calls {
		calls[i].cmd = calls[i].script.EvalSha(ctx, pipe, calls[i].keys, calls[i].args...)
	}
	_, _ = pipe.Exec(ctx) // errors are per command
	var missing []int
	for i, c := range calls {
		if err := c.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return ctx.Err()
	}
	pipe = d.rdb.Pipeline()
	for _, i := range missing {
		calls[i].cmd = calls[i].script.Eval(ctx, pipe, calls[i].keys, calls[i].args...)
	}
	_, _ = pipe.Exec(ctx)
	return ctx.Err()
}
