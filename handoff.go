package webhooks

import "sync"

// Enqueue's hand-off. While a Run of this Dispatcher has a slot to spare, Enqueue leases each fresh
// unordered delivery in its claim, as Dispatch does for an inline attempt (its schedule entry is in the
// shard's inline zset, due at the lease's end), and hands it to Run's slots with its body: the worker
// makes the attempt with no schedule read, lease script or body read of its own, and the outcome
// takes the entry out of the inline zset with one ZREM. Should the process die first, the lease ends
// and a worker's sweep takes the delivery into its queue (inline.go), as for an inline attempt. A
// webhook with a RateLimit, at its in-flight limit or whose circuit this process does not know to be
// closed, and an ordered event, go to their queues as before. Only the first Run of a Dispatcher (of
// those going at once) takes hand-offs. A delivery's attempt then outlives the Enqueue call that
// claimed it: it is one of Run's, which waits for it.

// handoffSlot reserves for one delivery to t a slot of this process's Run and one of t's in-flight
// slots, and returns that Run's slots; nil when no Run goes, it has no slot to spare (attempts and
// deliveries leased ahead, as a lane's pass counts them), or t is rate limited or at its limit.
func (d *Dispatcher) handoffSlot(t *storedWebhook) *runSlots {
	r := d.runs.Load()
	if r == nil || t.RateLimit > 0 || !r.reserve() {
		return nil
	}
	if d.flights.take(t.ID, 1) == 0 {
		r.unreserve()
		return nil
	}
	return r
}

// handoffs are Run's reservations for Enqueue: reserve and unreserve, handOff. Run ends with close.
type handoffs struct {
	pending sync.WaitGroup // reservations neither handed off nor given back
	closed  bool           // Run is ending: no more reservations (under runSlots.mu)
}

// reserve takes a slot for a delivery Enqueue may hand off: false once Run's context has ended, or no
// slot is free for a lane's pass to lease either. (A lane's pass holds the slots it may fill while it
// runs, so an Enqueue during a pass leaves its deliveries to their queues.)
func (r *runSlots) reserve() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handoffs.closed || r.ctx.Err() != nil || r.freeLocked() <= 0 { // Run ending: nothing new
		return false
	}
	r.leasing++
	r.handoffs.pending.Add(1)
	return true
}

// unreserve gives back a reservation whose delivery is not handed off (a duplicate, a failed claim).
func (r *runSlots) unreserve() {
	r.unclaim(1)
	r.handoffs.pending.Done()
}

// handOff starts the attempts of deliveries Enqueue leased on reservations (add), or has them wait for
// a slot as deliveries leased ahead do. Once Run's context has ended (the claim ran meanwhile), it
// starts none: they go to their queues, due when their leases end (requeueInline), for any worker.
func (r *runSlots) handOff(jobs []leasedDelivery) {
	defer r.handoffs.pending.Add(-len(jobs))
	if r.ctx.Err() == nil {
		r.add(jobs, len(jobs))
		return
	}
	r.unclaim(len(jobs))
	byShard := map[int][]*record{}
	for _, j := range jobs {
		r.d.flights.release(j.rec.WebhookID)
		byShard[j.shard] = append(byShard[j.shard], j.rec)
	}
	for shard, recs := range byShard {
		r.d.requeueInline(r.ctx, shard, recs)
	}
}

// close ends the hand-offs to a Run that is ending, once those reserved are handed off or given back
// (so Run's return waits for an Enqueue's claim in flight that reserved one of its slots).
func (r *runSlots) close() {
	r.mu.Lock()
	r.handoffs.closed = true
	r.mu.Unlock()
	r.d.runs.CompareAndSwap(r, nil)
	r.handoffs.pending.Wait()
}
