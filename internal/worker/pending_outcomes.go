package worker

import (
	"sync"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// MaxPendingOutcomes bounds the outcomes a Dispatcher keeps for Redis to take; more are dropped
// (their deliveries are attempted again after their leases, as before).
const MaxPendingOutcomes = 10000

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
