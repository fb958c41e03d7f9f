package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// loadBodies returns the request bodies of leased deliveries: those of events the Dispatcher claimed
// lately from memory (Bodies), the others (each event's once) in one round trip
// (rdb.ReadEventBodies). A body that has expired is nil.
func (a *Attempter) loadBodies(ctx context.Context, jobs []LeasedDelivery) ([][]byte, error) {
	now := time.Now()
	bodies := make([][]byte, len(jobs))
	var missing []string
	for i, j := range jobs {
		key := j.BodyKey(a.cfg.Keys)
		if body, ok := a.cfg.Bodies.Get(key, now); ok {
			bodies[i] = body
			continue
		}
		missing = append(missing, key)
	}
	if len(missing) == 0 {
		return bodies, nil
	}
	read, err := rdb.ReadEventBodies(ctx, a.cfg.Redis, missing)
	if err != nil {
		return nil, fmt.Errorf("webhooks: load event bodies: %w", err)
	}
	for i, j := range jobs {
		if bodies[i] == nil {
			bodies[i] = read[j.BodyKey(a.cfg.Keys)]
		}
	}
	return bodies, nil
}

// AttemptAll attempts leased deliveries (ProcessDue's pass), each on its own goroutine, and records
// each outcome as its attempt ends. It returns how many outcomes it recorded and the others' errors.
// The leases are taken: the attempts go on even if ctx ends, each within its own timeout.
func (a *Attempter) AttemptAll(ctx context.Context, jobs []LeasedDelivery) (int, error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	var settled atomic.Int64
	var mu sync.Mutex
	var errs []error
	done := func(err error) {
		if err == nil {
			settled.Add(1)
			return
		}
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	actx := context.WithoutCancel(ctx)
	bodies, err := a.loadBodies(actx, jobs)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			if err != nil {
				// Nothing attempted: the lease expires and a later pass takes the delivery again.
				a.cfg.Flights.Release(j.Rec.WebhookID)
				done(err)
				return
			}
			o, ok := a.waitRateSlot(actx, j)
			if ok {
				o = a.Attempt(actx, j, bodies[i])
			}
			o.Retime = j.Retime
			a.cfg.Flights.Release(j.Rec.WebhookID)
			done(a.cfg.Settle(actx, j.Shard, []*rdb.Record{j.Rec}, []Outcome{o})[0])
		})
	}
	wg.Wait()
	return int(settled.Load()), errors.Join(errs...)
}

// RunSlots are Run's attempt slots (Slots) and what its attempts need. Deliveries leased ahead hold
// their webhooks' in-flight slots (InFlight) as attempts do, so leasing ahead never lets a
// webhook hold more than its in-flight limit. A delivery that waited so long for a slot (attempts hanging) that
// too little of its lease is left for an attempt (LeaseLeftToAttempt) is not attempted: it goes back
// to its queue, due at once, rather than wait there for its lease to end; so does one whose attempt
// refuses to start for that reason after its rate-limit wait. A probe not sent is given back.
type RunSlots struct {
	a     *Attempter
	ctx   context.Context
	wg    *sync.WaitGroup
	slots *Slots[leasedReady]
}

// RunSlots returns the attempt slots of a Run going until ctx ends; wg tracks its attempts.
func (a *Attempter) RunSlots(ctx context.Context, wg *sync.WaitGroup) *RunSlots {
	r := &RunSlots{a: a, ctx: ctx, wg: wg}
	r.slots = NewSlots(a.cfg.Concurrency, a.cfg.Lease-a.leftToAttempt(), r.start)
	return r
}

// Free is how many deliveries a pass may lease now (Config.Free).
func (r *RunSlots) Free() int { return r.slots.Free() }

// Lease is a pass of Run's worker (Config.Lease): it leases up to free due deliveries, reading the
// shards mode says (Leaser.Lease), and starts their attempts (add).
func (r *RunSlots) Lease(ctx context.Context, free int, mode ScanMode) (int, time.Time, bool, error) {
	jobs, next, more, err := r.a.cfg.Leaser.Lease(ctx, free, mode)
	r.add(jobs)
	return len(jobs), next, more, err
}

// leasedReady is a leased delivery with its request body read, and the batch its outcome is recorded
// in: the deliveries of one shard leased together (typically an event's, to several webhooks) share
// an OutcomeBatch with no linger, so an outcome is written as its attempt ends, with those that ended
// at the same moment, and never waits for a slow attempt leased with it (concurrent writes still go
// out in one pipeline: rdb.ScriptBatcher). A pass leases up to Concurrency deliveries that mostly end
// together; held for a linger, a process killed in it would lose them all, each sent again after its
// lease (the chaos soak with a 100ms linger: 191 pairs sent twice in one soak, 169 of them after one
// kill; without it, at most 90 in 8 soaks).
type leasedReady struct {
	job   LeasedDelivery
	body  []byte
	batch *OutcomeBatch
}

// add reads the bodies of leased deliveries (one round trip) and starts their attempts, as many as
// there are free slots; the others wait for one (Slots.Add). Deliveries whose bodies cannot be read
// are let go: their leases expire and a later pass takes them again.
func (r *RunSlots) add(jobs []LeasedDelivery) {
	a := r.a
	if len(jobs) == 0 {
		return
	}
	bodies, err := a.loadBodies(context.WithoutCancel(r.ctx), jobs)
	if err != nil {
		for _, j := range jobs {
			a.cfg.Flights.Release(j.Rec.WebhookID)
		}
		a.cfg.Log.Warn("webhooks: worker attempts not made", "leased", len(jobs), "error", err)
		return
	}
	batches := map[int]*OutcomeBatch{}
	for _, j := range jobs {
		b := batches[j.Shard]
		if b == nil {
			b = NewOutcomeBatch(j.Shard, 0, a.cfg.Settle, a.cfg.Leaser.RequeueInline) // no linger: leasedReady
			b.Report = r.report
			batches[j.Shard] = b
		}
		b.Add(1)
	}
	ready := make([]leasedReady, len(jobs))
	for i, j := range jobs {
		ready[i] = leasedReady{job: j, body: bodies[i], batch: batches[j.Shard]}
	}
	r.slots.Add(ready)
}

// report logs a worker's outcome that could not be recorded (OutcomeBatch.Report).
func (r *RunSlots) report(err error) {
	if err != nil && !errors.Is(err, types.ErrDeferred) {
		r.a.cfg.Log.Warn("webhooks: worker attempt not recorded", "error", err)
	}
}

// start attempts a leased delivery on a goroutine of its own and records its outcome; its slot goes
// to the next waiting delivery as soon as the attempt is over, while the outcome is being written.
// The lease is taken: the attempt goes on even if Run's context ends. Called by Slots, its lock held.
func (r *RunSlots) start(l leasedReady) {
	a, actx := r.a, context.WithoutCancel(r.ctx)
	r.wg.Go(func() {
		j, began := l.job, time.Now()
		o, ok := HandBack(j.Rec, a.cfg.Now()), false
		if j.Rec.LeaseEnd.Sub(a.cfg.Now()) >= a.leftToAttempt() { // else it waited too long for a slot: back
			o, ok = a.waitRateSlot(actx, j)
		}
		if ok {
			o = a.Attempt(actx, j, l.body)
			if o.Unrecorded { // refused by attempt: too little of its lease left after its rate-limit wait
				o, ok = HandBack(j.Rec, a.cfg.Now()), false
			}
		}
		if ok {
			r.slots.Observe(time.Since(began))
		} else if j.Probe != "" {
			a.cfg.Leaser.ReleaseProbe(actx, j.Rec.WebhookID, j.Probe, j.Shard) // not sent: the next pass may probe at once
		}
		o.Retime = j.Retime
		a.cfg.Flights.Release(j.Rec.WebhookID)
		r.freed()
		a.cfg.CountNow(actx, j.Rec, &o) // now, not when its batch is written
		var err error
		l.batch.Ended(actx, j.Rec, o, &err)
	})
}

// freed passes an attempt's slot to the next waiting delivery, or frees it (Slots.Freed), and wakes
// the worker to lease more.
func (r *RunSlots) freed() {
	r.slots.Freed()
	r.a.cfg.Wake.Poke()
}
