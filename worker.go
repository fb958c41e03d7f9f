package webhooks

import (
	"context"
	"errors"
	"github.com/smartdrop/webhooks/internal/types"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smartdrop/webhooks/internal/ratelimit"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/worker"
)

// ProcessDue makes one bounded pass of the worker, for tests and cron-style use: it leases up to
// Options.Concurrency due deliveries, shared fairly among the webhooks that have some due, attempts
// them concurrently, records each outcome and returns how many it settled. Records that cannot be
// decoded are taken off the schedule and reported in the error (wrapped) while the others go on.
func (d *Dispatcher) ProcessDue(ctx context.Context) (int, error) {
	jobs, _, _, err := d.leaser.Lease(ctx, d.opts.Concurrency, worker.ScanFull)
	var settled atomic.Int64
	var mu sync.Mutex
	errs := []error{err}
	var wg sync.WaitGroup
	d.startJobs(ctx, &wg, jobs, func() {}, func(err error) {
		if err == nil {
			settled.Add(1)
			return
		}
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	})
	wg.Wait()
	return int(settled.Load()), errors.Join(errs...)
}

// Run is the worker: it keeps up to Options.Concurrency attempts in flight, and up to twice as many
// deliveries leased ahead (their bodies read; fewer when attempts are slow), so that an ending attempt
// is followed at once by the next while the worker leases more, shared fairly among the webhooks with
// deliveries due (a webhook at its in-flight cap, rate limit or with an open circuit never keeps the
// others' due deliveries waiting).
// Two passes may lease at once, each for the slots freed while the other waits for Redis. When nothing
// is due it waits until the next due time, at most 250ms, or until Enqueue in this process or an
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
	run := &runSlots{d: d, ctx: ctx, wg: &wg}
	run.slots = worker.NewSlots(d.opts.Concurrency, d.lease-d.leaseLeftToAttempt(), run.start)
	worker.New(worker.Config{
		Log: d.log, Now: d.now, Shards: func() int { return d.keys.Shards },
		Wake: d.wake, RedisLog: d.redisDown, Outage: &d.pending.Outage, Hooks: hooks,
		Claim:        run.slots.Claim,
		Ping:         func(ctx context.Context) error { return d.rdb.Ping(ctx).Err() },
		WritePending: d.writePending,
		Lease:        run.lease,
		Failed: func(err error) bool {
			rdb.ReloadOnTransport(d.rdb, err)
			return rdb.Retryable(err)
		},
	}).Run(ctx)
	return nil
}

// runSlots are Run's attempt slots (worker.Slots) and what its attempts need. Deliveries leased ahead
// hold their webhooks' in-flight slots (MaxInFlightPerWebhook) as attempts do, so leasing ahead never
// lets a webhook hold more than its cap. A delivery that waited so long for a slot (attempts hanging)
// that too little of its lease is left for an attempt (leaseLeftToAttempt) is not attempted: it goes
// back to its queue, due at once, rather than wait there for its lease to end; so does one whose
// attempt refuses to start for that reason after its rate-limit wait. A probe not sent is given back.
type runSlots struct {
	d     *Dispatcher
	ctx   context.Context
	wg    *sync.WaitGroup
	slots *worker.Slots[leasedReady]
}

// lease is a pass of Run's worker (worker.Config.Lease): it leases up to free due deliveries, reading
// the shards mode says, and starts their attempts (add).
func (r *runSlots) lease(ctx context.Context, free int, mode worker.ScanMode) (int, time.Time, bool, error) {
	jobs, next, more, err := r.d.leaser.Lease(ctx, free, mode)
	r.add(jobs, free)
	return len(jobs), next, more, err
}

// leasedReady is a leased delivery with its request body read, and the batch its outcome is recorded
// in: the deliveries of one shard leased together (typically an event's, to several webhooks) have
// their outcomes recorded together, in one outcome script, as Dispatch's do (worker.OutcomeBatch).
type leasedReady struct {
	job   worker.LeasedDelivery
	body  []byte
	batch *worker.OutcomeBatch
}

// add reads the bodies of leased deliveries (one round trip) and starts their attempts, as many as
// there are free slots; the others wait for one (worker.Slots.Add). Deliveries whose bodies cannot be
// read are let go: their leases expire and a later pass takes them again.
func (r *runSlots) add(jobs []worker.LeasedDelivery, claimed int) {
	if len(jobs) == 0 {
		r.slots.Unclaim(claimed)
		return
	}
	bodies, err := r.d.loadBodies(context.WithoutCancel(r.ctx), jobs)
	if err != nil {
		r.slots.Unclaim(claimed)
		for _, j := range jobs {
			r.d.flights.Release(j.Rec.WebhookID)
		}
		r.d.log.Warn("webhooks: worker attempts not made", "leased", len(jobs), "error", err)
		return
	}
	batches := map[int]*worker.OutcomeBatch{}
	for _, j := range jobs {
		b := batches[j.Shard]
		if b == nil {
			b = worker.NewOutcomeBatch(j.Shard, worker.SettleLinger(r.d.opts.Timeout), r.d.settle, r.d.requeueInline)
			b.Report = r.report
			batches[j.Shard] = b
		}
		b.Add(1)
	}
	ready := make([]leasedReady, len(jobs))
	for i, j := range jobs {
		ready[i] = leasedReady{job: j, body: bodies[i], batch: batches[j.Shard]}
	}
	r.slots.Add(ready, claimed)
}

// report logs a worker's outcome that could not be recorded (worker.OutcomeBatch.Report).
func (r *runSlots) report(err error) {
	if err != nil && !errors.Is(err, ErrDeferred) {
		r.d.log.Warn("webhooks: worker attempt not recorded", "error", err)
	}
}

// start attempts a leased delivery on a goroutine of its own and records its outcome; its slot goes
// to the next waiting delivery as soon as the attempt is over, while the outcome is being written.
// The lease is taken: the attempt goes on even if Run's context ends. Called by worker.Slots, its lock
// held.
func (r *runSlots) start(l leasedReady) {
	d, actx := r.d, context.WithoutCancel(r.ctx)
	r.wg.Go(func() {
		j, began := l.job, time.Now()
		o, ok := worker.HandBack(j.Rec, d.now()), false
		if j.Rec.LeaseEnd.Sub(d.now()) >= d.leaseLeftToAttempt() { // else it waited too long for a slot: back
			o, ok = d.waitRateSlot(actx, j)
		}
		if ok {
			o = d.attemptLeased(actx, j, j.Webhook, l.body)
			if o.Unrecorded { // refused by attempt: too little of its lease left after its rate-limit wait
				o, ok = worker.HandBack(j.Rec, d.now()), false
			}
		}
		if ok {
			r.slots.Observe(time.Since(began))
		} else if j.Probe != "" {
			d.leaser.ReleaseProbe(actx, j.Rec.WebhookID, j.Probe, j.Shard) // not sent: the next pass may probe at once
		}
		o.Retime = j.Retime
		d.flights.Release(j.Rec.WebhookID)
		r.freed()
		d.countNow(actx, j.Rec, &o) // now, not when its batch is written
		var err error
		l.batch.Ended(actx, j.Rec, o, &err)
	})
}

// freed passes an attempt's slot to the next waiting delivery, or frees it (worker.Slots.Freed), and
// wakes the worker to lease more.
func (r *runSlots) freed() {
	r.slots.Freed()
	r.d.wake.Poke()
}

// startJobs attempts leased deliveries, each on its own goroutine tracked by wg. It calls freed as
// soon as a delivery's attempt is over (its slot, and its webhook's in-flight slot, are free while its
// outcome is being written), then done with its settle error once the outcome is recorded. The leases
// are taken: the attempts go on even if ctx ends, each within its own timeout.
func (d *Dispatcher) startJobs(ctx context.Context, wg *sync.WaitGroup, jobs []worker.LeasedDelivery, freed func(), done func(error)) {
	if len(jobs) == 0 {
		return
	}
	actx := context.WithoutCancel(ctx)
	bodies, err := d.loadBodies(actx, jobs)
	for i, j := range jobs {
		wg.Go(func() {
			if err != nil {
				// Nothing attempted: the lease expires and a later pass takes the delivery again.
				d.flights.Release(j.Rec.WebhookID)
				freed()
				done(err)
				return
			}
			o, ok := d.waitRateSlot(actx, j)
			if ok {
				o = d.attemptLeased(actx, j, j.Webhook, bodies[i])
			}
			o.Retime = j.Retime
			d.flights.Release(j.Rec.WebhookID)
			freed()
			done(d.settle(actx, j.Shard, []*rdb.Record{j.Rec}, []worker.Outcome{o})[0])
		})
	}
}

// attemptLeased attempts a leased delivery, or refuses to when its webhook is gone or disabled.
// A delivery whose webhook's circuit is open (and that is not its probe) is parked, not attempted.
func (d *Dispatcher) attemptLeased(ctx context.Context, j worker.LeasedDelivery, wh *storedWebhook, body []byte) worker.Outcome {
	rec := j.Rec
	switch {
	case wh == nil:
		return worker.Refuse(rec, "webhook deleted: not attempted")
	case wh.Disabled && !isTestDelivery(rec):
		return worker.Refuse(rec, "webhook disabled: not attempted")
	case body == nil:
		return worker.Refuse(rec, "event body expired: not attempted")
	}
	if j.Probe == "" {
		if h := d.breaker.Circuit(ctx, rec.WebhookID); h.State != CircuitClosed {
			return parkOutcome(rec, types.Later(h.OpenUntil, d.now().Add(worker.ProbeRecheck)), h)
		}
	}
	slot, ok := d.takeConcurrencySlot(ctx, wh)
	if !ok {
		return waitForSlot(rec, d.now().Add(concurrencyRecheck))
	}
	res := d.tracedAttempt(ctx, wh, rec, body)
	d.releaseConcurrencySlot(ctx, wh.ID, slot)
	o := worker.Decide(rec, res, d.opts.RetrySchedule, d.lease, d.now())
	o.Probe = j.Probe
	return o
}

// isTestDelivery reports whether a delivery was made by SendTest, which reaches disabled webhooks too.
func isTestDelivery(rec *rdb.Record) bool {
	return rec.EventType == TestEventType && strings.HasPrefix(rec.EventID, "test_")
}

// waitRateSlot takes the rate-limit slot of an attempt to a rate-limited webhook and waits for it (at
// most worker.RateHorizon). With no slot that near, the delivery goes back to its queue, due when one is free,
// its retry budget kept: the returned outcome says so, and ok is false.
func (d *Dispatcher) waitRateSlot(ctx context.Context, j worker.LeasedDelivery) (worker.Outcome, bool) {
	if j.Webhook == nil || j.Webhook.RateLimit <= 0 || j.Webhook.Disabled {
		return worker.Outcome{}, true
	}
	key, limit := d.keys.Rate(j.Webhook.ID), j.Webhook.RateLimit
	delays, retryIn, err := ratelimit.Take(ctx, d.rdb, key, limit, 1, worker.RateHorizon)
	// A process stalled past its slot (GC, a busy CPU) would send late, next to the slots granted after
	// it: take a new slot instead, a few times at most.
	for try := 0; err == nil && len(delays) > 0 && try < 3; try++ {
		at := time.Now().Add(delays[0])
		time.Sleep(delays[0])
		if time.Since(at) < ratelimit.Interval(limit)/4 {
			return worker.Outcome{}, true
		}
		delays, retryIn, err = ratelimit.Take(ctx, d.rdb, key, limit, 1, worker.RateHorizon)
	}
	if err != nil || len(delays) == 0 {
		if err != nil {
			d.log.Warn("webhooks: rate limit", "webhook_id", j.Webhook.ID, "error", err)
			retryIn = time.Second
		}
		return worker.HandBack(j.Rec, d.now().Add(max(retryIn, worker.MinWait))), false
	}
	time.Sleep(delays[0])
	return worker.Outcome{}, true
}
