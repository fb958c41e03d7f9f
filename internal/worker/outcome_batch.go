package worker

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// SettleFunc records the outcomes of attempts on deliveries of one shard in one round trip, applies
// each recorded outcome to its in-memory record and returns one error per outcome, nil when recorded;
// an outcome whose attempt the caller abandoned (Outcome.Unrecorded) is left to its lease.
type SettleFunc func(ctx context.Context, shard int, recs []*rdb.Record, outcomes []Outcome) []error

// RequeueFunc takes inline attempts of one shard that will not be recorded into their queues, so that
// a worker attempts them after their leases.
type RequeueFunc func(ctx context.Context, shard int, recs []*rdb.Record)

// OutcomeBatch gathers the outcomes of attempts on deliveries of one shard (one call's inline attempts,
// all of one event, or the deliveries a worker leased together) so that outcomes ending close together
// are recorded in one outcome script, one round trip: an outcome is recorded once every attempt of the
// batch has ended, or the linger after it ended, whichever comes first. So a fresh Dispatch to healthy
// webhooks costs two round trips whatever its number of targets, and a slow subscriber holds back
// another's record by the linger at most.
type OutcomeBatch struct {
	settle   SettleFunc
	requeue  RequeueFunc
	shard    int
	linger   time.Duration
	allEnded chan struct{} // closed when the last attempt ends
	// Report, if set, is called with each outcome's settle error once it is recorded.
	Report func(err error)

	mu      sync.Mutex
	running int // attempts not ended; set before the first starts
	// The outcomes waiting to be recorded, their records, and where each Result's error goes.
	recs     []*rdb.Record
	outcomes []Outcome
	errs     []*error
}

// NewOutcomeBatch is an empty batch of outcomes of one shard, recorded by settle, lingering at most
// linger (SettleLinger); the caller adds its attempts (Add) before the first starts.
func NewOutcomeBatch(shard int, linger time.Duration, settle SettleFunc, requeue RequeueFunc) *OutcomeBatch {
	return &OutcomeBatch{settle: settle, requeue: requeue, shard: shard, linger: linger, allEnded: make(chan struct{})}
}

// SettleLinger is how long an outcome of Dispatch's inline attempts waits for the call's other
// attempts to end, to be recorded with theirs (a fresh Dispatch is two round trips): a tenth of the
// attempt timeout, at most 25ms. Attempts to healthy receivers end within a few milliseconds of each
// other, so 25ms batches them as 250ms did, and a process killed loses fewer outcomes answered just
// before (each a request sent again after its lease). The worker's batches do not linger
// (leasedReady).
func SettleLinger(timeout time.Duration) time.Duration {
	return min(timeout/10, 25*time.Millisecond)
}

// Add counts n more attempts in the batch; called before the first of them starts.
func (b *OutcomeBatch) Add(n int) {
	b.mu.Lock()
	b.running += n
	b.recs, b.outcomes, b.errs = slices.Grow(b.recs, n), slices.Grow(b.outcomes, n), slices.Grow(b.errs, n)
	b.mu.Unlock()
}

// Ended records an attempt's outcome, with others of the batch, and sets *err to its settle error. The
// attempt that ends last records every outcome waiting; the first to wait while others run records
// what has ended after the linger.
func (b *OutcomeBatch) Ended(ctx context.Context, rec *rdb.Record, o Outcome, err *error) {
	b.mu.Lock()
	b.recs, b.outcomes, b.errs = append(b.recs, rec), append(b.outcomes, o), append(b.errs, err)
	b.running--
	last, lead := b.running == 0, len(b.recs) == 1
	if last {
		close(b.allEnded)
	}
	b.mu.Unlock()
	switch {
	case last:
	case !lead:
		return // the one waiting records it
	default:
		t := time.NewTimer(b.linger)
		select {
		case <-b.allEnded:
		case <-t.C:
		}
		t.Stop()
	}
	b.mu.Lock()
	recs, outcomes, errs := b.recs, b.outcomes, b.errs
	b.recs, b.outcomes, b.errs = nil, nil, nil
	b.mu.Unlock()
	if len(recs) == 0 {
		return // the last attempt recorded them
	}
	var unrecorded []*rdb.Record
	for i := range outcomes {
		if outcomes[i].Unrecorded && outcomes[i].Inline {
			unrecorded = append(unrecorded, recs[i])
		}
	}
	if len(unrecorded) > 0 {
		b.requeue(ctx, b.shard, unrecorded) // settle leaves them to their leases
	}
	for i, e := range b.settle(ctx, b.shard, recs, outcomes) {
		*errs[i] = e
		if b.Report != nil {
			b.Report(e)
		}
	}
}
