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
// decoded are taken off the schedule and reported in the error (wrapped) while the others go on. A
// pass whose read Redis answered after more than a second (a pause) leases nothing and says so in the
// error: holders of leases that ended meanwhile may still be writing their outcomes; call it again.
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
// When nothing is due it sleeps until the next due time it knows of, and is woken sooner by what makes
// a delivery due: every script that does publishes it (a Redis channel per shard, PUBLISH), and Run
// listens on a connection of its own, so a delivery another replica enqueues or schedules is leased at
// once, or at its due time (a second later when that replica's own Run may take it: worker.WakeGrace);
// Enqueue in this process and an ending attempt wake it too. The deliveries
// this Dispatcher queued itself (Enqueue, a retry its outcome scheduled) it leases by id, without
// reading the schedule to find them (worker.LocalDue). An idle worker reads one shard's schedule every
// 4s (worker.SweepEvery: 2 commands), and pings its subscription when it has been quiet for 30s: about
// 0.5 commands/s per idle worker, whatever Options.Shards. The sweep finds, within Shards × 4s, what a
// lost wake would have told; a subscription made again reads every shard once. Any number of replicas
// may run it at once; each due attempt is made by one of them. It backs off (up to 5s) only when Redis
// fails it; after a failed pass, or one Redis answered more than a second late (worker.StallLimit), it
// leases nothing for 3s once Redis answers (worker.OutageGrace), while the outcomes kept are written. It returns nil when ctx ends, after the attempts in flight have finished and been recorded.
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
		Listen: worker.NewListener(worker.ListenerConfig{Redis: d.rdb, Keys: d.keys, Hints: d.leaser.Hints, Log: d.log,
			LoadKeys: func(ctx context.Context) error { return loadKeys(ctx, d.keys, d.rdb) }}).Listen,
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
