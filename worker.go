package webhooks

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/worker"
)

// ProcessDue makes one bounded pass of the worker, for tests and cron-style use: it leases up to
// Options.Concurrency due deliveries, shared fairly among the webhooks that have some due, attempts
// them concurrently, records each outcome and returns how many it settled. Records that cannot be
// decoded are taken off the schedule and reported in the error (wrapped) while the others go on.
func (d *Dispatcher) ProcessDue(ctx context.Context) (int, error) {
	jobs, _, _, err := d.leaser.Lease(ctx, d.opts.Concurrency, worker.ScanFull)
	n, aerr := d.attempter.AttemptAll(ctx, jobs)
	return n, errors.Join(err, aerr)
}

// Run is the worker: it keeps up to Options.Concurrency attempts in flight, and up to twice as many
// deliveries leased ahead (their bodies read; fewer when attempts are slow), so that an ending attempt
// is followed at once by the next while the worker leases more, shared fairly among the webhooks with
// deliveries due (a webhook at its in-flight limit, rate limit or with an open circuit never keeps the
// others' due deliveries waiting).
// When nothing is due it waits until the next due time, at most 250ms, or until Enqueue in this process or an
// ending attempt wakes it. The deliveries this Dispatcher queued itself (Enqueue, a retry its outcome
// scheduled) it leases by id, without reading the schedule to find them (worker.LocalDue); beyond those,
// it reads only the shards whose schedule may hold something due (as it last read them), a few at a
// time, and sweeps the others in turn: an idle poll reads at most 16 keys (64 commands/s per idle
// worker, whatever Options.Shards), so a delivery another replica makes due is seen within Shards/14
// polls (1.25s with the default 64 shards; worker.ScanHints). Any number of replicas may run it at once; each
// due attempt is made by one of them. It backs off (up to 5s) only when Redis fails it. It returns nil
// when ctx ends, after the attempts in flight have finished and been recorded.
func (d *Dispatcher) Run(ctx context.Context) error { return runWorker(ctx, d, worker.Hooks{}) }

// runWorker is Dispatcher.Run, making the calls of hooks.
func runWorker(ctx context.Context, d *Dispatcher, hooks worker.Hooks) error {
	defer d.leaser.Running()()
	if policy, err := rdb.MaxmemoryPolicy(ctx, d.rdb); err == nil {
		d.redisDown.MayEvict(policy)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	run := d.attempter.RunSlots(ctx, &wg)
	worker.New(worker.Config{
		Log: d.log, Now: d.now, Shards: func() int { return d.keys.Shards },
		Wake: d.wake, RedisLog: d.redisDown, Outage: &d.pending.Outage, Hooks: hooks,
		Free:         run.Free,
		Ping:         func(ctx context.Context) error { return rdb.Ping(ctx, d.rdb) },
		WritePending: func(ctx context.Context) { d.pending.Write(ctx, d.now, d.settle, d.log) },
		Lease:        run.Lease,
		Failed: func(err error) bool {
			rdb.ReloadOnTransport(d.rdb, err)
			return rdb.Retryable(err)
		},
	}).Run(ctx)
	return nil
}

// newLeaser returns the worker's lease pass of d, on its Redis client and units.
func newLeaser(d *Dispatcher) *worker.Leaser {
	return worker.NewLeaser(worker.LeaserConfig{Redis: d.rdb, Keys: d.keys, Scripts: d.scripts, Breaker: d.breaker,
		Local: worker.NewLocalDue(max(1024, 16*d.opts.Concurrency)), Flights: d.flights,
		LoadKeys: func(ctx context.Context) error { return loadKeys(ctx, d.keys, d.rdb) },
		Webhooks: d.webhooks.byIDs, Lease: d.lease,
		FirstShard: rand.Uint32(), // replicas start their scans at different shards
		Now:        func() time.Time { return d.now() }, Log: d.log})
}

// newAttempter returns the worker's attempts of d, after its lease pass (newLeaser): the request
// (d.send: attempt within its trace span), the outcomes' record (settle) and circuit counts (countNow) are the Dispatcher's.
func newAttempter(d *Dispatcher) *worker.Attempter {
	return worker.NewAttempter(worker.AttempterConfig{Redis: d.rdb, Keys: d.keys, Breaker: d.breaker, Flights: d.flights,
		Bodies: d.bodies, Leaser: d.leaser, Wake: d.wake, Concurrency: d.opts.Concurrency, Lease: d.lease,
		Timeout: d.opts.Timeout, RetrySchedule: d.opts.RetrySchedule, Now: func() time.Time { return d.now() }, Log: d.log,
		Send: d.send, Settle: d.settle, CountNow: d.countNow})
}
