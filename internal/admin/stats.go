package admin

// The backlog's figures (the Dispatcher's Stats, the admin API's GET /backlog): read from the
// schedule's zsets and the queues of the webhooks first due in each shard, at a cost bounded whatever
// the backlog.

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// The bounds of Stats, documented where the root re-exports them (webhooks.StatsWebhooksPerShard,
// webhooks.StatsLeasesPerShard).
const (
	StatsWebhooksPerShard = 64
	StatsLeasesPerShard   = 256
)

// BacklogStats is the Dispatcher's Stats: a snapshot of the delivery backlog across all shards, in
// at most three pipelined round trips (statsReady, statsQueues, statsLeases) whose cost does not grow
// with the backlog.
func (b *Backend) BacklogStats(ctx context.Context) (*types.Stats, error) {
	st, _, err := b.backlogStats(ctx)
	return st, err
}

// backlogStats is BacklogStats, and the ids of the webhooks whose circuits are open.
func (b *Backend) backlogStats(ctx context.Context) (*types.Stats, []string, error) {
	if err := b.LoadKeys(ctx); err != nil {
		return nil, nil, err
	}
	now := b.Now()
	st := &types.Stats{At: now, Shards: make([]types.ShardStats, b.Keys.Shards)}
	heads, open, err := b.statsReady(ctx, now, st)
	if err != nil {
		return nil, nil, err
	}
	leases, err := b.statsQueues(ctx, now, st, heads)
	if err != nil {
		return nil, nil, err
	}
	if err := b.statsLeases(ctx, st, leases); err != nil {
		return nil, nil, err
	}
	sumShards(st, now)
	return st, open, nil
}

// statsReady reads, in one round trip, the ready zsets (their size and first webhooks), the inline
// zsets and the circuits (rdb.ReadSchedules); it fills each shard's webhook counts, inline attempts and
// the open circuits, and returns each shard's webhooks examined and the webhooks whose circuits are
// open.
func (b *Backend) statsReady(ctx context.Context, now time.Time, st *types.Stats) ([][]string, []string, error) {
	schedules, circuits, err := rdb.ReadSchedules(ctx, b.Client, b.Keys, now, StatsWebhooksPerShard)
	if err != nil {
		return nil, nil, err
	}
	var open []string
	for id, v := range circuits {
		if h := breaker.HealthOf(id, v, now); h.State != types.CircuitClosed {
			st.OpenCircuits++
			open = append(open, id)
		}
	}
	out := make([][]string, b.Keys.Shards)
	for s, sc := range schedules {
		sh := &st.Shards[s]
		out[s] = sc.Heads
		sh.Shard, sh.Webhooks, sh.Examined = s, sc.Webhooks, int64(len(out[s]))
		sh.Truncated = sh.Webhooks > sh.Examined
		st.BlockedKeys += sc.BlockedKeys
		// The inline attempts (Keys.Inline): leased, or due when the lease has ended (no outcome came:
		// a worker takes it over), the oldest of those due since its lease's end.
		sh.Leased += sc.InlineAll - sc.InlineEnded
		sh.Due += sc.InlineEnded
		if sc.InlineEnded > 0 && !sc.InlineFirst.IsZero() {
			sh.OldestDueAt = sc.InlineFirst
		}
	}
	return out, open, nil
}

// statsQueues reads the queues of the webhooks examined (rdb.ReadQueueStats) and fills each shard's
// due, scheduled and oldest due; it returns, per shard, the deliveries whose score lies within a lease
// from now, whose leases statsLeases reads.
func (b *Backend) statsQueues(ctx context.Context, now time.Time, st *types.Stats, heads [][]string) ([][]string, error) {
	queues, err := rdb.ReadQueueStats(ctx, b.Client, b.Keys, now, now.Add(b.Lease), heads, StatsLeasesPerShard)
	if err != nil {
		return nil, err
	}
	window := make([][]string, b.Keys.Shards)
	for _, q := range queues {
		sh := &st.Shards[q.Shard]
		sh.Due, sh.Scheduled = sh.Due+q.Due, sh.Scheduled+q.Total-q.Due
		// A ready entry is left behind a queue that emptied until a worker reads it: the queues
		// examined count only when they hold a delivery.
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
func (b *Backend) statsLeases(ctx context.Context, st *types.Stats, window [][]string) error {
	leased, err := rdb.CountLeased(ctx, b.Client, b.Keys, window)
	if err != nil {
		return err
	}
	for s, n := range leased {
		sh := &st.Shards[s]
		sh.Leased, sh.Scheduled = sh.Leased+n, sh.Scheduled-n
	}
	return nil
}

// sumShards sums the shards of st into its totals.
func sumShards(st *types.Stats, now time.Time) {
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
