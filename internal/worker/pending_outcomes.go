package worker

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

const (
	// MaxPendingOutcomes bounds the outcomes a Dispatcher keeps for Redis to take; more are dropped
	// (their deliveries are attempted again after their leases, as before).
	MaxPendingOutcomes = 10000
	// MaxPendingOutcomeAge is how long a kept outcome is tried; then it is dropped.
	MaxPendingOutcomeAge = 5 * time.Minute
)

// PendingOutcomes are the outcomes a Dispatcher keeps for Redis to take (those whose write failed in
// transport for their whole lease), and its worker's view of an outage. Safe for concurrent use.
type PendingOutcomes struct {
	Outage
	mu     sync.Mutex
	groups []PendingGroup
	n      int // outcomes in groups
}

// PendingGroup is one settle's outcomes that Redis did not take.
type PendingGroup struct {
	Shard    int
	Recs     []*rdb.Record
	Outcomes []Outcome
}

// Keep adds outcomes (of one shard, at least one) unless MaxPendingOutcomes are kept; it reports
// whether it did. Their PendingSince is set if it is not.
func (p *PendingOutcomes) Keep(shard int, recs []*rdb.Record, outcomes []Outcome, now time.Time) bool {
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
	p.groups = append(p.groups, PendingGroup{Shard: shard, Recs: recs, Outcomes: outcomes})
	p.n += len(outcomes)
	return true
}

// Take returns every group kept, and keeps none.
func (p *PendingOutcomes) Take() []PendingGroup {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.groups
	p.groups, p.n = nil, 0
	return g
}

// KeepCopies keeps, for Run to write, copies of the outcomes idx of outcomes and their records (the
// callers keep theirs), marked counted when their circuit count ran, and notes the outage
// (Outage.PassFailed). It reports false when it dropped them: MaxPendingOutcomes are kept already.
func (p *PendingOutcomes) KeepCopies(shard int, recs []*rdb.Record, outcomes []Outcome, idx []int, counted bool, now time.Time) bool {
	if len(idx) == 0 {
		return true
	}
	p.PassFailed()
	kr, ko := make([]*rdb.Record, len(idx)), make([]Outcome, len(idx))
	for j, i := range idx {
		r := *recs[i]
		r.History = slices.Clone(r.History)
		kr[j], ko[j] = &r, outcomes[i]
		ko[j].Counted = ko[j].Counted || counted
	}
	return p.Keep(shard, kr, ko, now)
}

// Write writes the outcomes kept with settle (which keeps again those Redis still does not take), and
// drops those kept longer than MaxPendingOutcomeAge.
func (p *PendingOutcomes) Write(ctx context.Context, now func() time.Time, settle SettleFunc, log *slog.Logger) {
	for _, g := range p.Take() {
		recs, outcomes := g.Recs[:0:0], g.Outcomes[:0:0]
		for i, o := range g.Outcomes {
			if now().Sub(o.PendingSince) > MaxPendingOutcomeAge {
				log.Warn("webhooks: outcome dropped: Redis did not take it within MaxPendingOutcomeAge",
					"delivery_id", o.ID, "kept_for", MaxPendingOutcomeAge.String())
				continue
			}
			recs, outcomes = append(recs, g.Recs[i]), append(outcomes, o)
		}
		if len(outcomes) > 0 {
			settle(ctx, g.Shard, recs, outcomes)
		}
	}
}
