package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/worker"
)

// hints returns the Dispatcher's scan hints, made on first use (the keyspace's layout is loaded).
func (d *Dispatcher) hints() *worker.ScanHints {
	d.hintsOnce.Do(func() {
		d.hintsPtr = worker.NewScanHints(d.keys.Shards, d.nextShard.Load())
	})
	return d.hintsPtr
}

// markShard tells the worker that this Dispatcher wrote a shard's schedule: its next scan reads it.
func (d *Dispatcher) markShard(shard int) { d.hints().Mark(shard) }

// queueLocal tells this Dispatcher's worker, while Run is going, that delivery id of webhook is due in
// shard at at: it leases it by id (worker.LocalDue); with no Run going, or the hint full, the worker's next
// scan reads the shard instead.
func (d *Dispatcher) queueLocal(shard int, webhook, id string, at time.Time) {
	if d.running.Load() == 0 || !d.local.Add(shard, webhook, id, at.UnixMilli(), d.now().UnixMilli()) {
		d.markShard(shard)
	}
}

// scanReady reads, in one round trip (rdb.ReadDue), the webhooks with deliveries due (up to limit
// per shard) in the shards that may have some, plus a sweep or every shard, as the scan hints plan it
// for mode (worker.ScanHints.Plan), and the inline attempts whose lease has ended in the inline zsets
// read. It returns those, what it read (for worker.ScanHints.AfterLease), and the earliest due time in
// the future that it knows of.
func (d *Dispatcher) scanReady(ctx context.Context, now time.Time, limit int, mode worker.ScanMode) ([]worker.Due, []stray, worker.ScanRead, time.Time, error) {
	h, nowMs := d.hints(), now.UnixMilli()
	plan := h.Plan(nowMs, mode)
	if plan.Empty() {
		return nil, nil, worker.ScanRead{Limit: limit, Left: plan.Left}, h.KnownDue(nowMs), nil
	}
	ready, ended, err := rdb.ReadDue(ctx, d.rdb, d.keys, plan.Ready, plan.Inline, limit, nowMs)
	if err != nil {
		h.Unread(plan) // not read: read them again
		return nil, nil, worker.ScanRead{Limit: limit, Left: plan.Left}, time.Time{}, fmt.Errorf("webhooks: read schedules: %w", err)
	}
	due, read := h.Read(plan, nowMs, limit, ready)
	var strays []stray
	for _, e := range ended {
		strays = append(strays, stray{shard: e.Shard, id: e.ID, webhookID: e.WebhookID})
	}
	return due, strays, read, h.KnownDue(nowMs), nil
}
