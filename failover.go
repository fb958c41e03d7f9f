package webhooks

// Failover: what the library does when Redis fails in transport.
//
// go-redis's ClusterClient learns a new slot map on a MOVED or ASK reply, or every minute; a
// connection error (a master killed, its replica being promoted) triggers neither, so on its own it
// would go on sending a failed-over shard's commands to the dead master for up to a minute. Every
// transport error the library sees against a *redis.ClusterClient therefore asks go-redis to reload
// the slot map (ReloadState: one CLUSTER SLOTS, at most one per 200ms), so commands reach the
// promoted replica as soon as the cluster has promoted it (cluster-node-timeout plus an election,
// about 3s with cluster-node-timeout 2000).
//
// An outcome write that fails in transport may or may not have run; the outcome script is idempotent
// by the lease token (it recognises its own earlier run), so settle runs it again, with backoff, for as
// long as the lease leaves room — a Redis blip or a failover does not turn an attempt already made into
// a second send. Only when the lease is nearly over does it give up and leave the delivery to a worker
// after the lease.

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// isTransient reports whether a Redis call failed in transport (a timeout, a dropped connection), so
// that it may or may not have run.
func isTransient(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, syscall.ECONNRESET)
}

// reloadOnTransport asks a cluster client to reload its slot map after a transport error, or after
// a redirect its caller could not follow (a node client's MOVED or ASK).
func (d *Dispatcher) reloadOnTransport(err error) {
	if err == nil {
		return
	}
	if c, ok := d.rdb.(*redis.ClusterClient); ok && (isTransient(err) || isRedirect(err)) {
		c.ReloadState(context.Background())
	}
}

// isRedirect reports whether err is a cluster redirect (MOVED, ASK) or a node's refusal while the
// cluster changes (CLUSTERDOWN, TRYAGAIN).
func isRedirect(err error) bool {
	return redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK") ||
		redis.HasErrorPrefix(err, "CLUSTERDOWN") || redis.HasErrorPrefix(err, "TRYAGAIN")
}

// retryable reports whether a write that failed with err may be run again to the same effect: it
// failed in transport, the cluster was changing, or Redis refused it for now (isRefusedForNow).
func retryable(err error) bool { return isTransient(err) || isRedirect(err) || isRefusedForNow(err) }

// isRefusedForNow reports whether Redis refused a command for a reason that passes: it is out of
// memory under maxmemory-policy noeviction (OOM) or still loading its dataset after a restart
// (LOADING). A plain command wrote nothing; a script stops at its first command that adds data, and
// every script that writes may be run again to the same effect (by lease token or by the record it
// read), so the same write may be sent again later.
func isRefusedForNow(err error) bool {
	return redis.HasErrorPrefix(err, "OOM") || redis.HasErrorPrefix(err, "LOADING")
}

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
	for backoff := settleFirstBackoff; err != nil && retryable(err) && ctx.Err() == nil; backoff = min(2*backoff, settleMaxBackoff) {
		d.reloadOnTransport(err)
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
