package webhooks

import (
	"context"
	"slices"
	"sync"
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
	MaxPendingOutcomes = 10000
	// MaxPendingOutcomeAge is how long a kept outcome is tried; then it is dropped.
	MaxPendingOutcomeAge = 5 * time.Minute
)

// pendingOutcomes are the outcomes a Dispatcher keeps for Redis to take, and its worker's view of an
// outage. Safe for concurrent use.
type pendingOutcomes struct {
	worker.Outage
	mu     sync.Mutex
	groups []pendingGroup
	n      int // outcomes in groups
}

// pendingGroup is one settle's outcomes that Redis did not take.
type pendingGroup struct {
	shard    int
	recs     []*rdb.Record
	outcomes []worker.Outcome
}

// keep adds outcomes (of one shard, at least one) unless MaxPendingOutcomes are kept; it reports
// whether it did. Their pendingSince is set if it is not.
func (p *pendingOutcomes) keep(shard int, recs []*rdb.Record, outcomes []worker.Outcome, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n+len(outcomes) > MaxPendingOutcomes {
		return false
	}
	for i := range outcomes {
		if outcomes[i].PendingSince.IsZero() {
			outcomes[i].PendingSince = now
		}
	}
	p.groups = append(p.groups, pendingGroup{shard: shard, recs: recs, outcomes: outcomes})
	p.n += len(outcomes)
	return true
}

// take returns every group kept, and keeps none.
func (p *pendingOutcomes) take() []pendingGroup {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.groups
	p.groups, p.n = nil, 0
	return g
}

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
	if !d.pending.keep(shard, kr, ko, d.now()) {
		d.log.Warn("webhooks: outcomes dropped: MaxPendingOutcomes are kept for Redis already", "shard", shard, "outcomes", len(idx))
	}
}

// writePending writes the outcomes kept (settle keeps again those Redis still does not take) and drops
// those kept longer than MaxPendingOutcomeAge.
func (d *Dispatcher) writePending(ctx context.Context) {
	for _, g := range d.pending.take() {
		recs, outcomes := g.recs[:0:0], g.outcomes[:0:0]
		for i, o := range g.outcomes {
			if d.now().Sub(o.PendingSince) > MaxPendingOutcomeAge {
				d.log.Warn("webhooks: outcome dropped: Redis did not take it within MaxPendingOutcomeAge",
					"delivery_id", o.ID, "kept_for", MaxPendingOutcomeAge.String())
				continue
			}
			recs, outcomes = append(recs, g.recs[i]), append(outcomes, o)
		}
		if len(outcomes) > 0 {
			d.settle(ctx, g.shard, recs, outcomes)
		}
	}
}
