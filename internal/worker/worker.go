package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

const (
	// MinWait keeps Run from spinning on a due time that is a hair away.
	MinWait = 5 * time.Millisecond
	// minBackoff is Run's first wait after Redis failed it.
	minBackoff = 100 * time.Millisecond
	// maxErrorBackoff bounds Run's wait after Redis failed it.
	maxErrorBackoff = 5 * time.Second
)

// Config is what a Worker is built of: the units it drives and what it asks of the Dispatcher.
type Config struct {
	Log      *slog.Logger
	Now      func() time.Time // the Dispatcher's clock (due times); waits are measured on the wall clock
	Shards   func() int       // the keyspace's shard count, once a pass has loaded the layout
	Wake     *Wake            // how the worker is woken: Enqueue, an ending attempt
	RedisLog *RedisLog        // the worker's warnings while Redis fails it
	Outage   *Outage          // the worker's view of a Redis outage
	Hooks    Hooks

	// Free is how many deliveries a pass may lease now (Slots.Free).
	Free func() int
	// Ping asks Redis whether it answers, after an outage.
	Ping func(ctx context.Context) error
	// WritePending writes the outcomes kept while Redis could not take them.
	WritePending func(ctx context.Context)
	// Lease leases up to free due deliveries, reading the shards mode says, and starts their attempts.
	// It returns how many it leased, the earliest due time in the future it knows of, whether more may
	// be due at once, and Redis's errors.
	Lease func(ctx context.Context, free int, mode ScanMode) (leased int, next time.Time, more bool, err error)
	// Failed tells the Dispatcher a pass failed with err and leased nothing (a cluster's slot map may
	// need reloading); it reports whether err is one Redis may get over (Retryable).
	Failed func(err error) (retryable bool)
	// Listen hears the schedule's wakes until ctx ends (Listener.Listen): it pokes Wake, and calls ready
	// once subscribed (or once subscribing failed). Nil: the worker hears none (its sweep still reads).
	Listen func(ctx context.Context, wake *Wake, ready func())
}

// Worker is a Dispatcher's worker loop: it leases for the attempt slots free, sleeps until something
// may be due or a wake, and backs off when Redis fails it.
type Worker struct {
	cfg Config
}

// New returns the Worker of cfg. It does no I/O.
func New(cfg Config) *Worker { return &Worker{cfg: cfg} }

// Run is the lease loop: it leases for the slots free (one pass at a time; BENCHMARKS.md measured a
// second loop leasing meanwhile and found no gain) and, when nothing it can take is due, sleeps until
// the earliest time its scan hints name (a due time, a lease's end, the sweep: ScanHints.Next) or a
// wake (Listen, Enqueue, an ending attempt), until ctx ends. It returns once Listen has returned.
func (w *Worker) Run(ctx context.Context) {
	c := w.cfg
	if c.Listen != nil {
		lctx, cancel := context.WithCancel(ctx)
		listening, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			c.Listen(lctx, c.Wake, func() { close(listening) })
		}()
		// The Listener ends with Run; a pass before it has subscribed could miss what is published meanwhile.
		defer func() { cancel(); <-done }()
		select {
		case <-listening:
		case <-ctx.Done():
		}
	}
	backoff := minBackoff
	recheck := IdleWait // the wait before a due shard the last passes could not take from is read again
	dry := 0            // passes in a row that leased nothing though more may be due
	for ctx.Err() == nil {
		if c.Outage.IsDown() { // after an outage: lease nothing until Redis answers, then wait the grace
			if err := c.Ping(ctx); err != nil {
				c.RedisLog.Down(time.Now(), "webhooks: worker could not reach Redis", "error", err)
				c.Wake.Sleep(ctx, OutagePing) // not a backoff: the kept outcomes go out within the grace
				continue
			}
			c.Outage.Reached(time.Now())
			backoff = minBackoff
		}
		c.WritePending(ctx)
		if wait := c.Outage.GraceLeft(time.Now()); wait > 0 {
			c.Wake.Sleep(ctx, wait)
			continue
		}
		free := c.Free()
		if free <= 0 {
			c.Wake.Sleep(ctx, IdleWait) // an ending attempt pokes
			continue
		}
		leased, next, more, err := c.Lease(ctx, free, ScanHinted)
		switch {
		case err != nil && leased == 0:
			retryable := c.Failed(err)
			c.RedisLog.Down(time.Now(), "webhooks: worker could not lease: is Redis reachable?", "error", err)
			if retryable || errors.Is(err, ErrStalled) {
				c.Outage.PassFailed()
			}
			c.Wake.Sleep(ctx, backoff)
			backoff = min(2*backoff, maxErrorBackoff)
			continue
		case err != nil:
			c.Log.Warn("webhooks: worker lease had errors", "leased", leased, "error", err)
		}
		backoff = minBackoff
		switch {
		case leased > 0:
			dry, recheck = 0, IdleWait
			continue // more may be due
		case more && dry <= c.Shards()/ScanShardsPerPass:
			dry++
			continue // shards left unread may have some due: every one is read before Run waits
		}
		dry = 0
		wait := SweepEvery // at most: a clock a test moves is caught up with
		if left := next.Sub(c.Now()); next.IsZero() || left <= 0 {
			// Due, but not taken (parked, at a limit): read again soon, later while it stays so.
			wait, recheck = recheck, min(2*recheck, SweepEvery)
		} else {
			wait, recheck = min(wait, max(left, MinWait)), IdleWait
		}
		if c.Hooks.Idled != nil {
			c.Hooks.Idled()
		}
		c.Wake.Sleep(ctx, wait) // a wake, Enqueue or an ending attempt cuts it short
	}
}
