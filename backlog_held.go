package webhooks

// The backlog's held deliveries: those due now that no worker will attempt, because of their webhook
// (its circuit is open, it is disabled, or every slot of its MaxConcurrency is taken), so that the
// admin API's GET /backlog (the UI's Backlog page) does not count them as waiting for a worker.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/api"
)

// What holds a webhook's due deliveries (api.HeldQueue.Why).
const (
	heldPaused     = "paused"             // its circuit is open: they are parked until it may be probed
	heldDisabled   = "disabled"           // it is disabled: the worker fails them unattempted
	heldAtMaxSlots = "at_max_concurrency" // every slot of its MaxConcurrency is held by an attempt
)

// heldDue reads which of the webhooks Stats examines (the first StatsWebhooksPerShard of each shard's
// ready zset) hold due deliveries no worker will attempt now, and how many, the most first (never nil). It makes
// three round trips of at most Shards, 1 + 1 and Shards × (webhooks that may hold) + 1 commands: the
// ready zsets, the webhooks and their circuits, then their queues and MaxConcurrency slots.
func (d *Dispatcher) heldDue(ctx context.Context, now time.Time) ([]api.HeldQueue, error) {
	if err := loadKeys(ctx, d.keys, d.rdb); err != nil {
		return nil, err
	}
	pipe := d.rdb.Pipeline()
	heads := make([]*redis.StringSliceCmd, d.keys.Shards)
	for s := range d.keys.Shards {
		heads[s] = pipe.ZRange(ctx, d.keys.Ready(s), 0, StatsWebhooksPerShard-1)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("webhooks: backlog: read schedules: %w", err)
	}
	var ids []string
	for _, h := range heads {
		ids = append(ids, h.Val()...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) == 0 {
		return []api.HeldQueue{}, nil
	}
	whs, _, err := d.webhooks.byIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	circuits, err := d.breaker.Read(ctx, now, ids...)
	if err != nil {
		return nil, err
	}
	// The webhooks that may hold, with their due deliveries counted in one round trip.
	type candidate struct {
		held  api.HeldQueue
		due   []*redis.IntCmd
		slots *redis.IntCmd
	}
	var cands []*candidate
	nowMs := strconv.FormatInt(now.UnixMilli(), 10)
	pipe = d.rdb.Pipeline()
	for _, id := range ids {
		wh, h := whs[id], circuits[id]
		if wh == nil {
			continue
		}
		c := &candidate{held: api.HeldQueue{WebhookID: id, URL: wh.URL}}
		switch {
		case wh.Disabled:
			c.held.Why, c.held.DisabledReason = heldDisabled, wh.DisabledReason
		case h.State != CircuitClosed:
			c.held.Why, c.held.OpenUntil, c.held.Failures = heldPaused, h.OpenUntil, h.ConsecutiveFailures
		case wh.MaxConcurrency > 0:
			c.held.Why, c.held.MaxConcurrency = heldAtMaxSlots, wh.MaxConcurrency
			c.slots = pipe.ZCount(ctx, d.keys.Concurrency(id), "("+nowMs, "+inf")
		default:
			continue
		}
		for s := range d.keys.Shards {
			c.due = append(c.due, pipe.ZCount(ctx, d.keys.Queue(s, id), "-inf", nowMs))
		}
		cands = append(cands, c)
	}
	if len(cands) == 0 {
		return []api.HeldQueue{}, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("webhooks: backlog: read held queues: %w", err)
	}
	out := []api.HeldQueue{}
	for _, c := range cands {
		if c.slots != nil && c.slots.Val() < int64(c.held.MaxConcurrency) {
			continue // a slot is free: its due deliveries wait for a worker like any
		}
		for _, n := range c.due {
			c.held.Due += n.Val()
		}
		if c.held.Due > 0 {
			out = append(out, c.held)
		}
	}
	slices.SortFunc(out, func(a, b api.HeldQueue) int {
		return cmp.Or(cmp.Compare(b.Due, a.Due), cmp.Compare(a.WebhookID, b.WebhookID))
	})
	return out, nil
}
