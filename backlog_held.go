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
)

// What holds a webhook's due deliveries (heldQueue.Why).
const (
	heldPaused     = "paused"             // its circuit is open: they are parked until it may be probed
	heldDisabled   = "disabled"           // it is disabled: the worker fails them unattempted
	heldAtMaxSlots = "at_max_concurrency" // every slot of its MaxConcurrency is held by an attempt
)

// heldQueue is a webhook whose due deliveries no worker will attempt now, and why.
type heldQueue struct {
	WebhookID string `json:"webhook_id"`
	URL       string `json:"url"`
	// Due is how many of its deliveries are due now, in every shard.
	Due int64  `json:"due"`
	Why string `json:"why"` // heldPaused, heldDisabled or heldAtMaxSlots
	// OpenUntil and Failures are its circuit's, when paused; DisabledReason why it is disabled;
	// MaxConcurrency its cap, when at it.
	OpenUntil      time.Time `json:"open_until,omitzero"`
	Failures       int       `json:"failures,omitempty"`
	DisabledReason string    `json:"disabled_reason,omitempty"`
	MaxConcurrency int       `json:"max_concurrency,omitempty"`
}

// heldDue reads which of the webhooks Stats examines (the first StatsWebhooksPerShard of each shard's
// ready zset) hold due deliveries no worker will attempt now, and how many, the most first (never nil). It makes
// three round trips of at most Shards, 1 + 1 and Shards × (webhooks that may hold) + 1 commands: the
// ready zsets, the webhooks and their circuits, then their queues and MaxConcurrency slots.
func (d *Dispatcher) heldDue(ctx context.Context, now time.Time) ([]heldQueue, error) {
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
		return []heldQueue{}, nil
	}
	whs, _, err := d.webhooks.byIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	circuits, err := d.circuits.read(ctx, now, ids...)
	if err != nil {
		return nil, err
	}
	// The webhooks that may hold, with their due deliveries counted in one round trip.
	type candidate struct {
		held  heldQueue
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
		c := &candidate{held: heldQueue{WebhookID: id, URL: wh.URL}}
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
		return []heldQueue{}, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("webhooks: backlog: read held queues: %w", err)
	}
	out := []heldQueue{}
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
	slices.SortFunc(out, func(a, b heldQueue) int {
		return cmp.Or(cmp.Compare(b.Due, a.Due), cmp.Compare(a.WebhookID, b.WebhookID))
	})
	return out, nil
}
