package admin

// The backlog's held deliveries: those due now that no worker will attempt, because of their webhook
// (its circuit is open, it is disabled, or every slot of its MaxConcurrency is taken), so that the
// admin API's GET /backlog (the UI's Backlog page) does not count them as waiting for a worker.

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// What holds a webhook's due deliveries (api.HeldQueue.Why).
const (
	heldPaused     = "paused"             // its circuit is open: they are parked until it may be probed
	heldDisabled   = "disabled"           // it is disabled: the worker fails them unattempted
	heldAtMaxSlots = "at_max_concurrency" // every slot of its MaxConcurrency is held by an attempt
)

// held reads which of the webhooks Stats examines (the first StatsWebhooksPerShard of each shard's
// ready zset) hold due deliveries no worker will attempt now, and how many, the most first (never
// nil). It makes three round trips of at most Shards, 1 + 1 and Shards × (webhooks that may hold) + 1
// commands: the ready zsets, the webhooks and their circuits, then their queues and MaxConcurrency
// slots.
func (b *Backend) held(ctx context.Context, now time.Time) ([]api.HeldQueue, error) {
	if err := b.LoadKeys(ctx); err != nil {
		return nil, err
	}
	heads, err := rdb.ReadReadyHeads(ctx, b.Client, b.Keys, StatsWebhooksPerShard)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, h := range heads {
		ids = append(ids, h...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) == 0 {
		return []api.HeldQueue{}, nil
	}
	whs, err := b.WebhookRepo.StoredByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	circuits, err := b.Breaker.Read(ctx, now, ids...)
	if err != nil {
		return nil, err
	}
	// The webhooks that may hold, with their due deliveries counted in one round trip.
	var cands []api.HeldQueue
	var reads []rdb.DueRead
	for _, id := range ids {
		wh, h := whs[id], circuits[id]
		if wh == nil {
			continue
		}
		held, read := api.HeldQueue{WebhookID: id, URL: wh.URL}, rdb.DueRead{WebhookID: id}
		switch {
		case wh.Disabled:
			held.Why, held.DisabledReason = heldDisabled, wh.DisabledReason
		case h.State != types.CircuitClosed:
			held.Why, held.OpenUntil, held.Failures = heldPaused, h.OpenUntil, h.ConsecutiveFailures
		case wh.MaxConcurrency > 0:
			held.Why, held.MaxConcurrency, read.Slots = heldAtMaxSlots, wh.MaxConcurrency, true
		default:
			continue
		}
		cands, reads = append(cands, held), append(reads, read)
	}
	counts, err := rdb.CountDue(ctx, b.Client, b.Keys, now, reads)
	if err != nil {
		return nil, err
	}
	out := []api.HeldQueue{}
	for i, held := range cands {
		if reads[i].Slots && counts[i].Slots < int64(held.MaxConcurrency) {
			continue // a slot is free: its due deliveries wait for a worker like any
		}
		if held.Due = counts[i].Due; held.Due > 0 {
			out = append(out, held)
		}
	}
	slices.SortFunc(out, func(a, b api.HeldQueue) int {
		return cmp.Or(cmp.Compare(b.Due, a.Due), cmp.Compare(a.WebhookID, b.WebhookID))
	})
	return out, nil
}
