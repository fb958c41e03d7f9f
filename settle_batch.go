package webhooks

import (
	"context"
	"sync"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/worker"
)

// outcomeBatch gathers the outcomes of one call's inline attempts (all of one event, so of one shard)
// so that outcomes ending close together are recorded in one outcome script, one round trip: an
// outcome is recorded once every attempt of the call has ended, or settleLinger after it ended,
// whichever comes first. So a fresh Dispatch to healthy webhooks costs two round trips whatever its
// number of targets, and a slow subscriber holds back another's record by settleLinger at most.
type outcomeBatch struct {
	d        *Dispatcher
	shard    int
	linger   time.Duration
	allEnded chan struct{}   // closed when the last attempt ends
	report   func(err error) // if set, called with each outcome's settle error once it is recorded

	mu      sync.Mutex
	running int // attempts not ended; set before the first starts
	waiting []endedAttempt
}

// endedAttempt is an outcome waiting to be recorded, and where its Result's error goes.
type endedAttempt struct {
	rec *rdb.Record
	o   worker.Outcome
	err *error
}

// newOutcomeBatch is an empty batch of outcomes of one shard; the caller sets running before the
// first attempt starts.
func (d *Dispatcher) newOutcomeBatch(shard int) *outcomeBatch {
	return &outcomeBatch{d: d, shard: shard, linger: d.settleLinger(), allEnded: make(chan struct{})}
}

// settleLinger is how long an inline outcome waits for the call's other attempts to end, to be
// recorded with theirs: a tenth of Options.Timeout, at most 250ms.
func (d *Dispatcher) settleLinger() time.Duration {
	return min(d.opts.Timeout/10, 250*time.Millisecond)
}

// ended records an attempt's outcome, with others of the call, and sets *err to its settle error. The
// attempt that ends last records every outcome waiting; the first to wait while others run records
// what has ended after the linger.
func (b *outcomeBatch) ended(ctx context.Context, rec *rdb.Record, o worker.Outcome, err *error) {
	b.mu.Lock()
	b.waiting = append(b.waiting, endedAttempt{rec: rec, o: o, err: err})
	b.running--
	last, lead := b.running == 0, len(b.waiting) == 1
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
	batch := b.waiting
	b.waiting = nil
	b.mu.Unlock()
	if len(batch) == 0 {
		return // the last attempt recorded them
	}
	recs, outcomes := make([]*rdb.Record, len(batch)), make([]worker.Outcome, len(batch))
	var unrecorded []*rdb.Record
	for i, e := range batch {
		recs[i], outcomes[i] = e.rec, e.o
		if e.o.Unrecorded && e.o.Inline {
			unrecorded = append(unrecorded, e.rec)
		}
	}
	if len(unrecorded) > 0 {
		b.d.requeueInline(ctx, b.shard, unrecorded) // settle leaves them to their leases
	}
	for i, e := range b.d.settle(ctx, b.shard, recs, outcomes) {
		*batch[i].err = e
		if b.report != nil {
			b.report(e)
		}
	}
}
