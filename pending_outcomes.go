package webhooks

import (
	"context"
	"slices"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/worker"
)

// Outcomes that Redis could not take. An attempt whose outcome write fails in transport for its whole
// lease (Redis restarting, paused, unreachable) is kept here and written by Run once Redis answers:
// the write is conditional on the attempt's lease token, so it lands only if no other attempt of the
// delivery has leased it since, and the request is not repeated. After a pass of the worker fails, Run
// waits worker.OutageGrace once Redis answers again before it leases anything, writing what it kept
// first (worker.Outage).

const (
	// MaxPendingOutcomes bounds the outcomes a Dispatcher keeps for Redis to take; more are dropped
	// (their deliveries are attempted again after their leases, as before).
	MaxPendingOutcomes = worker.MaxPendingOutcomes
	// MaxPendingOutcomeAge is how long a kept outcome is tried; then it is dropped.
	MaxPendingOutcomeAge = 5 * time.Minute
)

// keepPending keeps, for Run to write, copies of the outcomes of idx and their records (the callers
// keep theirs), marked counted when their circuit count ran; and notes the outage.
func (d *Dispatcher) keepPending(shard int, recs []*rdb.Record, outcomes []worker.Outcome, idx []int, count *circuitCount) {
	if len(idx) == 0 {
		return
	}
	d.pending.PassFailed()
	kr, ko := make([]*rdb.Record, len(idx)), make([]worker.Outcome, len(idx))
	for j, i := range idx {
		r := *recs[i]
		r.History = slices.Clone(r.History)
		kr[j], ko[j] = &r, outcomes[i]
		ko[j].Counted = ko[j].Counted || count.sent()
	}
	if !d.pending.Keep(shard, kr, ko, d.now()) {
		d.log.Warn("webhooks: outcomes dropped: MaxPendingOutcomes are kept for Redis already", "shard", shard, "outcomes", len(idx))
	}
}

// writePending writes the outcomes kept (settle keeps again those Redis still does not take) and drops
// those kept longer than MaxPendingOutcomeAge.
func (d *Dispatcher) writePending(ctx context.Context) {
	for _, g := range d.pending.Take() {
		recs, outcomes := g.Recs[:0:0], g.Outcomes[:0:0]
		for i, o := range g.Outcomes {
			if d.now().Sub(o.PendingSince) > MaxPendingOutcomeAge {
				d.log.Warn("webhooks: outcome dropped: Redis did not take it within MaxPendingOutcomeAge",
					"delivery_id", o.ID, "kept_for", MaxPendingOutcomeAge.String())
				continue
			}
			recs, outcomes = append(recs, g.Recs[i]), append(outcomes, o)
		}
		if len(outcomes) > 0 {
			d.settle(ctx, g.Shard, recs, outcomes)
		}
	}
}
