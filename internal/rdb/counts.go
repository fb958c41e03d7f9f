package rdb

// Counts of the schedule, read for the admin API's backlog and a webhook's counts: pipelines of ZCARD,
// ZCOUNT and ZRANGE whose cost does not grow with the backlog.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

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
