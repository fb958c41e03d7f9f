package rdb

// The reads of Stats: the schedules (ReadSchedules), then the queues of the webhooks examined and the
// lease byte of the deliveries within a lease from now, one read-only script per shard each.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ShardSchedule is what ReadSchedules reads of one shard.
type ShardSchedule struct {
	// Webhooks is the size of the ready zset (Keys.Ready); Heads its first webhooks.
	Webhooks int64
	Heads    []string
	// BlockedKeys is how many order keys have deliveries waiting behind their head (Keys.Blocked).
	BlockedKeys int64
	// InlineAll is how many deliveries the inline zset holds (Keys.Inline), InlineEnded how many of them
	// have a lease that ended by now, InlineFirst the earliest lease end (zero for none).
	InlineAll, InlineEnded int64
	InlineFirst            time.Time
}

// ReadSchedules reads, in one round trip of 5 × Shards + 1 commands, every shard's schedule (its ready
// zset's size and first heads webhooks, its blocked keys, its inline zset) and the circuits hash
// (Keys.Circuits: webhook id -> its breaker state).
func ReadSchedules(ctx context.Context, c redis.UniversalClient, k Keys, now time.Time, heads int) ([]ShardSchedule, map[string]string, error) {
	nowMs := strconv.FormatInt(now.UnixMilli(), 10)
	type reads struct {
		blocked, card, inlineAll, inlineEnded *redis.IntCmd
		heads                                 *redis.StringSliceCmd
		inlineFirst                           *redis.ZSliceCmd
	}
	pipe := c.Pipeline()
	rs := make([]reads, k.Shards)
	for s := range k.Shards {
		rs[s] = reads{blocked: pipe.ZCount(ctx, k.Blocked(s), nowMs, "+inf"),
			card:        pipe.ZCard(ctx, k.Ready(s)),
			heads:       pipe.ZRange(ctx, k.Ready(s), 0, int64(heads)-1),
			inlineAll:   pipe.ZCard(ctx, k.Inline(s)),
			inlineEnded: pipe.ZCount(ctx, k.Inline(s), "-inf", nowMs),
			inlineFirst: pipe.ZRangeWithScores(ctx, k.Inline(s), 0, 0)}
	}
	circuits := pipe.HGetAll(ctx, k.Circuits())
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, fmt.Errorf("webhooks: read schedules: %w", err)
	}
	out := make([]ShardSchedule, k.Shards)
	for s, r := range rs {
		out[s] = ShardSchedule{Webhooks: r.card.Val(), Heads: r.heads.Val(), BlockedKeys: r.blocked.Val(),
			InlineAll: r.inlineAll.Val(), InlineEnded: r.inlineEnded.Val()}
		if first := r.inlineFirst.Val(); len(first) == 1 {
			out[s].InlineFirst = MilliTime(int64(first[0].Score))
		}
	}
	return out, circuits.Val(), nil
}

// QueueStats is what ReadQueueStats reads of the queues examined in one shard.
type QueueStats struct {
	Shard int
	// Due is how many of their deliveries are due by now, Total how many they hold.
	Due, Total int64
	// OldestDue is the score of the oldest due delivery (zero for none).
	OldestDue time.Time
	// InWindow is how many deliveries are scheduled within the lease window; Window the ids of the
	// first of them (at most the bound asked for).
	InWindow int64
	Window   []string
	// Held is how many of the queues hold a delivery.
	Held int64
}

// ReadQueueStats reads, one script per shard in one round trip (two on a server that lost the
// script), the queues of the webhooks heads[s] of each shard s: their due and total deliveries, the
// oldest due, and the ids of at most maxWindow deliveries scheduled between now and leaseEnd. Shards
// with no heads are skipped.
func ReadQueueStats(ctx context.Context, c redis.UniversalClient, k Keys, now, leaseEnd time.Time, heads [][]string, maxWindow int) ([]QueueStats, error) {
	var calls []ShardCall
	for s, ids := range heads {
		if len(ids) == 0 {
			continue
		}
		keys := make([]string, len(ids))
		for i, id := range ids {
			keys[i] = k.Queue(s, id)
		}
		calls = append(calls, ShardCall{Shard: s, Script: StatsQueues, Keys: keys,
			Args: []any{now.UnixMilli(), leaseEnd.UnixMilli(), maxWindow}})
	}
	if err := EvalAll(ctx, c, calls); err != nil {
		return nil, fmt.Errorf("webhooks: stats: read queues: %w", err)
	}
	out := make([]QueueStats, 0, len(calls))
	for _, call := range calls {
		reply, err := call.Cmd.Slice()
		if err == nil && len(reply) < 5 {
			err = fmt.Errorf("unexpected reply of %d items", len(reply))
		}
		if err != nil {
			return nil, fmt.Errorf("webhooks: stats: shard %d: %w", call.Shard, err)
		}
		q := QueueStats{Shard: call.Shard}
		q.Due, _ = reply[0].(int64)
		q.Total, _ = reply[1].(int64)
		oldest, _ := reply[2].(int64)
		q.InWindow, _ = reply[3].(int64)
		q.Held, _ = reply[4].(int64)
		if oldest > 0 {
			q.OldestDue = MilliTime(oldest)
		}
		for _, item := range reply[5:] {
			id, _ := item.(string)
			q.Window = append(q.Window, id)
		}
		out = append(out, q)
	}
	return out, nil
}

// CountLeased counts, one script per shard in one round trip (two on a server that lost the script),
// how many of the deliveries ids[s] of each shard s hold a lease (their record's lease byte): one count
// per shard, 0 for a shard with no ids.
func CountLeased(ctx context.Context, c redis.UniversalClient, k Keys, ids [][]string) ([]int64, error) {
	var calls []ShardCall
	for s, shardIDs := range ids {
		if len(shardIDs) == 0 {
			continue
		}
		keys := make([]string, len(shardIDs))
		for i, id := range shardIDs {
			keys[i] = k.Delivery(s, id)
		}
		calls = append(calls, ShardCall{Shard: s, Script: StatsLeases, Keys: keys})
	}
	if err := EvalAll(ctx, c, calls); err != nil {
		return nil, fmt.Errorf("webhooks: stats: read leases: %w", err)
	}
	out := make([]int64, len(ids))
	for _, call := range calls {
		n, err := call.Cmd.Int64()
		if err != nil {
			return nil, fmt.Errorf("webhooks: stats: shard %d: %w", call.Shard, err)
		}
		out[call.Shard] = n
	}
	return out, nil
}
