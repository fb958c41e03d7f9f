package webhooks

// Failover (internal/rdb/failover.go says how a Redis failure is told and a cluster's slot map
// reloaded): settle's retries of an outcome write.
//
// An outcome write that fails in transport may or may not have run; the outcome script is idempotent
// by the lease token (it recognises its own earlier run), so settle runs it again, with backoff, for as
// long as the lease leaves room — a Redis blip or a failover does not turn an attempt already made into
// a second send. Only when the lease is nearly over does it give up and leave the delivery to a worker
// after the lease.

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// Bounds of settle's retries of an outcome write.
const (
	settleFirstBackoff = 50 * time.Millisecond
	settleMaxBackoff   = time.Second
	// settleMargin is how much of the lease settle leaves unused: no try starts closer to its end.
	settleMargin = 250 * time.Millisecond
)

// retryWithinLease runs write, and runs it again while it fails in transport and the lease (until
// leaseEnd, less settleMargin) leaves room for another try, with backoff; the first try is bounded
// by one lease, the others by what is left of it. It returns the last error. Time is counted on the
// wall clock from the Dispatcher's view of the lease.
func (d *Dispatcher) retryWithinLease(ctx context.Context, leaseEnd time.Time, write func(context.Context) error) error {
	until := time.Now().Add(leaseEnd.Sub(d.now()) - settleMargin)
	tctx, cancel := context.WithTimeout(ctx, d.lease)
	err := write(tctx)
	cancel()
	for backoff := settleFirstBackoff; err != nil && rdb.Retryable(err) && ctx.Err() == nil; backoff = min(2*backoff, settleMaxBackoff) {
		rdb.ReloadOnTransport(d.rdb, err)
		if time.Now().Add(backoff).After(until) {
			break
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		tctx, cancel := context.WithDeadline(ctx, until)
		err = write(tctx)
		cancel()
	}
	return err
}
