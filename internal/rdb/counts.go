package rdb

// Counts of the schedule, read for Stats, the admin API's backlog and a webhook's counts: pipelines of
// ZCARD, ZCOUNT and ZRANGE whose cost does not grow with the backlog.

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

// ReadReadyHeads reads, in one round trip, the first n webhooks of every shard's ready zset.
func ReadReadyHeads(ctx context.Context, c redis.UniversalClient, k Keys, n int) ([][]string, error) {
	pipe := c.Pipeline()
	heads := make([]*redis.StringSliceCmd, k.Shards)
	for s := range k.Shards {
		heads[s] = pipe.ZRange(ctx, k.Ready(s), 0, int64(n)-1)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("webhooks: read schedules: %w", err)
	}
	out := make([][]string, k.Shards)
	for s, h := range heads {
		out[s] = h.Val()
	}
	return out, nil
}

// WebhookQueues is what ReadWebhookQueues reads of a webhook.
type WebhookQueues struct {
	// Pending is how many deliveries its queues hold (Keys.Queue), Parked how many of them are due by
	// the time asked for.
	Pending, Parked int64
	// Index is the newest entries of its index in each shard (Keys.Index), newest first.
	Index [][]redis.XMessage
}

// ReadWebhookQueues reads, in one round trip of at most 3 × Shards commands, a webhook's queue in every
// shard (ZCARD, and ZCOUNT up to parkedUntil unless it is zero) and the newest count entries of its
// index in every shard.
func ReadWebhookQueues(ctx context.Context, c redis.UniversalClient, k Keys, webhookID string, parkedUntil time.Time, count int) (WebhookQueues, error) {
	until := strconv.FormatInt(parkedUntil.UnixMilli(), 10)
	pipe := c.Pipeline()
	cards, parked := make([]*redis.IntCmd, k.Shards), make([]*redis.IntCmd, k.Shards)
	reads := make([]*redis.XMessageSliceCmd, k.Shards)
	for s := range k.Shards {
		q := k.Queue(s, webhookID)
		cards[s] = pipe.ZCard(ctx, q)
		if !parkedUntil.IsZero() {
			parked[s] = pipe.ZCount(ctx, q, "-inf", until)
		}
		reads[s] = pipe.XRevRangeN(ctx, k.Index(s, webhookID), "+", "-", int64(count))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return WebhookQueues{}, fmt.Errorf("webhooks: count the deliveries of %s: %w", webhookID, err)
	}
	out := WebhookQueues{Index: make([][]redis.XMessage, k.Shards)}
	for s := range k.Shards {
		out.Pending += cards[s].Val()
		if parked[s] != nil {
			out.Parked += parked[s].Val()
		}
		out.Index[s] = reads[s].Val()
	}
	return out, nil
}

// DueRead asks CountDue for a webhook's deliveries due now in every shard and, with Slots set, for
// its MaxConcurrency slots held beyond now (Keys.Concurrency).
type DueRead struct {
	WebhookID string
	Slots     bool
}

// DueCount is CountDue's answer for one DueRead: Slots is 0 when it was not asked for.
type DueCount struct {
	Due, Slots int64
}

// CountDue counts, in one round trip of at most len(reads) × (Shards + 1) commands, each webhook's
// deliveries due by now and, when asked, its slots held: one DueCount per read.
func CountDue(ctx context.Context, c redis.UniversalClient, k Keys, now time.Time, reads []DueRead) ([]DueCount, error) {
	if len(reads) == 0 {
		return nil, nil
	}
	nowMs := strconv.FormatInt(now.UnixMilli(), 10)
	pipe := c.Pipeline()
	due := make([][]*redis.IntCmd, len(reads))
	slots := make([]*redis.IntCmd, len(reads))
	for i, r := range reads {
		if r.Slots {
			slots[i] = pipe.ZCount(ctx, k.Concurrency(r.WebhookID), "("+nowMs, "+inf")
		}
		for s := range k.Shards {
			due[i] = append(due[i], pipe.ZCount(ctx, k.Queue(s, r.WebhookID), "-inf", nowMs))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("webhooks: count due deliveries: %w", err)
	}
	out := make([]DueCount, len(reads))
	for i := range reads {
		if slots[i] != nil {
			out[i].Slots = slots[i].Val()
		}
		for _, n := range due[i] {
			out[i].Due += n.Val()
		}
	}
	return out, nil
}
