package worker

import (
	"context"
	"slices"
	"sync"
	"time"
)

// InFlight counts one Dispatcher's attempts per webhook, inline and worker alike, and bounds them by a
// limit per webhook that follows its health (additive increase, multiplicative decrease, as TCP's
// congestion window and Netflix's concurrency-limits AIMD do):
//
//   - A webhook's limit starts at the in-flight floor (Concurrency/4, at least one: the root's
//     inFlightFloor).
//   - A recorded attempt that succeeded within Timeout/4 (fast) raises it by one, up to
//     FastInFlightFactor × the floor, when the webhook has held at least half its limit at once since
//     the limit last changed: the limit grows only as far as the webhook uses it, to at most twice the
//     most attempts it has held at once, plus one.
//   - A failed attempt (any other answer, a timeout, a connection error), or a success slower than
//     Timeout/4, lowers it by a tenth (at least one), not below the floor.
//   - A webhook that holds attempts and has freed no slot for Timeout/2 is stalled: its limit drops to
//     the floor at once.
//
// A caller that finds its webhook at its limit (Acquire) waits in turn, first come first served: each
// slot freed, or added by a raise of the limit, goes to the caller that has waited longest. It waits as
// long as the webhook keeps ending attempts: it gives up (the attempt goes to the worker) once the
// webhook is stalled, or once Timeout has passed since the call began to wait for its slots (all its
// webhooks' together). So whether a healthy webhook's callers get their attempts inline depends on its
// attempts ending, not on how fast: a burst waits for the slots its own attempts free, however slowly a
// loaded machine runs them, as long as Timeout/2 never passes with none freed. (Timeout/2 is the
// margin an inline lease keeps beyond an attempt: a machine that slow defers attempts for their lease
// anyway.)
//
// A webhook never seen to succeed within Timeout/4 (hung from the start) holds at most the floor. One
// that turns hung after being fast holds at most the limit it had reached: at most FastInFlightFactor ×
// the floor, and at most twice the most attempts it held at once while it was fast, plus one; and it
// starts new attempts only until Timeout/2 after its last ended attempt, when it is stalled and held to
// the floor (its hung attempts end with Timeout, each failure lowering the limit).
type InFlight struct {
	mu      sync.Mutex
	hooks   map[string]*flight
	floor   int           // the in-flight floor (Concurrency/4): where every limit starts, and its least
	ceiling int           // FastInFlightFactor × floor
	fast    time.Duration // Timeout/4: a success within it is fast
	stall   time.Duration // Timeout/2: a webhook holding attempts that frees no slot for it is stalled
	maxWait time.Duration // Timeout: the longest a call waits for its slots
	now     func() time.Time
	moved   chan struct{} // closed by Recheck
}

// flight is one webhook's attempts in flight, its limit and the callers waiting for a slot.
type flight struct {
	n        int
	limit    int       // floor ≤ limit ≤ ceiling
	busy     bool      // it has held at least half its limit at once since the limit last changed
	progress time.Time // when it last freed a slot or had an attempt recorded, or took one holding none
	waiters  []*slotWaiter
}

// slotWaiter is a caller waiting for a slot; granted is set (under InFlight.mu) as ready is closed.
type slotWaiter struct {
	granted bool
	ready   chan struct{}
}

// FastInFlightFactor is how many times the in-flight floor (Concurrency/4) a webhook's limit may grow
// to.
const FastInFlightFactor = 16

// NewInFlight bounds attempts by limits whose floor is limit (the in-flight floor, Concurrency/4), for
// attempts of timeout, on the clock now (the wall clock in a Dispatcher: waiting is real time).
func NewInFlight(limit int, timeout time.Duration, now func() time.Time) *InFlight {
	return &InFlight{hooks: map[string]*flight{}, floor: limit, ceiling: limit * FastInFlightFactor,
		fast: timeout / 4, stall: timeout / 2, maxWait: timeout, now: now, moved: make(chan struct{})}
}

// Recheck has every caller waiting for a slot look at the clock again: for a clock a test moves
// (a waiting caller otherwise looks again when a slot is freed or when its wait, measured on the
// clock when it began, has passed in real time).
func (f *InFlight) Recheck() {
	f.mu.Lock()
	close(f.moved)
	f.moved = make(chan struct{})
	f.mu.Unlock()
}

// Now is the time on the slots' clock.
func (f *InFlight) Now() time.Time { return f.now() }

// Held is how many slots a webhook holds and its limit now.
func (f *InFlight) Held(webhookID string) (n, limit int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.hooks[webhookID]
	if w == nil {
		return 0, f.floor
	}
	return w.n, f.limitOf(w, f.now())
}

// stalled reports whether w holds attempts and has freed no slot for f.stall; f.mu is held.
func (f *InFlight) stalled(w *flight, now time.Time) bool {
	return w.n > 0 && now.Sub(w.progress) >= f.stall
}

// limitOf is w's limit at now: the floor once it is stalled; f.mu is held.
func (f *InFlight) limitOf(w *flight, now time.Time) int {
	if f.stalled(w, now) && w.limit > f.floor {
		w.limit, w.busy = f.floor, false
	}
	return w.limit
}

// get returns a webhook's entry, made if missing; f.mu is held.
func (f *InFlight) get(webhookID string) *flight {
	w := f.hooks[webhookID]
	if w == nil {
		w = &flight{limit: f.floor}
		f.hooks[webhookID] = w
	}
	return w
}

// hold gives w one more slot; f.mu is held.
func (f *InFlight) hold(w *flight, now time.Time) {
	if w.n <= 0 {
		w.progress = now
	}
	w.n++
	w.busy = w.busy || 2*w.n >= w.limit
}

// Take takes up to want slots of a webhook without waiting, and returns how many it took. Callers
// waiting for a slot (Acquire) come first.
func (f *InFlight) Take(webhookID string, want int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	w := f.get(webhookID)
	got := min(want, f.limitOf(w, now)-w.n)
	if got <= 0 || len(w.waiters) > 0 {
		f.drop(webhookID, w)
		return 0
	}
	for range got {
		f.hold(w, now)
	}
	return got
}

// Acquire takes one slot of a webhook, waiting in turn while the webhook is at its limit. since is when
// the call began to wait for slots (on f.now's clock; a call taking several webhooks' slots passes the
// same since to each). It gives up (false) once the webhook is stalled (it has freed no slot for
// Timeout/2), once Timeout has passed since since, or when ctx ends.
func (f *InFlight) Acquire(ctx context.Context, webhookID string, since time.Time) bool {
	f.mu.Lock()
	now := f.now()
	w := f.get(webhookID)
	if len(w.waiters) == 0 && w.n < f.limitOf(w, now) {
		f.hold(w, now)
		f.mu.Unlock()
		return true
	}
	me := &slotWaiter{ready: make(chan struct{})}
	w.waiters = append(w.waiters, me)
	for {
		// w stays in f.hooks while it has waiters (drop keeps it).
		now = f.now()
		if me.granted {
			f.mu.Unlock()
			return true
		}
		if f.stalled(w, now) || now.Sub(since) >= f.maxWait {
			f.leave(webhookID, w, me)
			f.mu.Unlock()
			return false
		}
		wait := min(since.Add(f.maxWait).Sub(now), w.progress.Add(f.stall).Sub(now))
		moved := f.moved
		f.mu.Unlock()
		timer := time.NewTimer(wait)
		select {
		case <-me.ready:
			timer.Stop()
		case <-moved:
			timer.Stop()
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			f.mu.Lock()
			if me.granted {
				f.free(webhookID, w)
			} else {
				f.leave(webhookID, w, me)
			}
			f.mu.Unlock()
			return false
		}
		f.mu.Lock()
	}
}

// leave withdraws a waiter that was not granted a slot; f.mu is held.
func (f *InFlight) leave(webhookID string, w *flight, me *slotWaiter) {
	if i := slices.Index(w.waiters, me); i >= 0 {
		w.waiters = slices.Delete(w.waiters, i, i+1)
	}
	f.drop(webhookID, w)
}

// grant gives the slots w has free to its waiters, longest waiting first; f.mu is held.
func (f *InFlight) grant(w *flight, now time.Time) {
	for len(w.waiters) > 0 && w.n < f.limitOf(w, now) {
		next := w.waiters[0]
		w.waiters = slices.Delete(w.waiters, 0, 1)
		f.hold(w, now)
		next.granted = true
		close(next.ready)
	}
}

// Room is how many more attempts a webhook may start now.
func (f *InFlight) Room(webhookID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.hooks[webhookID]
	if w == nil {
		return f.floor
	}
	return f.limitOf(w, f.now()) - w.n
}

// Release gives back one slot of a webhook: to the caller that has waited longest, if any.
func (f *InFlight) Release(webhookID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w := f.hooks[webhookID]; w != nil {
		f.free(webhookID, w)
	}
}

// free gives back one slot of w; f.mu is held.
func (f *InFlight) free(webhookID string, w *flight) {
	now := f.now()
	w.n--
	w.progress = now
	f.grant(w, now)
	f.drop(webhookID, w)
}

// Observe notes a recorded attempt of a webhook: a success within Timeout/4 (fast) raises its limit by
// one when it has held at least half of it since it last changed; a failure or a slow success lowers it
// by a tenth (at least one), not below the floor.
func (f *InFlight) Observe(webhookID string, success bool, took time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.hooks[webhookID]
	if w == nil {
		return // holding nothing, at the floor: not busy, and never below the floor
	}
	now := f.now()
	w.progress = now
	limit := f.limitOf(w, now)
	switch {
	case success && took < f.fast:
		if w.busy && limit < f.ceiling {
			w.limit++
		}
	default:
		w.limit = max(f.floor, limit-max(1, limit/10))
	}
	if w.limit != limit {
		w.busy = 2*w.n >= w.limit
	}
	f.grant(w, now)
	f.drop(webhookID, w)
}

// drop forgets a webhook's entry once it holds no slot, has no waiter, and its limit is the floor with
// no raise pending (busy: a fast success after its slots were freed still raises it), and forgets the
// other idle webhooks (their limits too) when the map grows large; f.mu is held.
func (f *InFlight) drop(webhookID string, w *flight) {
	idle := func(w *flight) bool { return w.n <= 0 && len(w.waiters) == 0 }
	if idle(w) && w.limit == f.floor && !w.busy {
		delete(f.hooks, webhookID)
	}
	if len(f.hooks) > 10_000 {
		for id, x := range f.hooks {
			if idle(x) {
				delete(f.hooks, id)
			}
		}
	}
}

// GiveBack gives back the in-flight slots reserved (per webhook) for deliveries that were not leased:
// those reserved beyond the leased deliveries jobs.
func (f *InFlight) GiveBack(jobs []LeasedDelivery, reserved map[string]int) {
	for _, j := range jobs {
		reserved[j.Rec.WebhookID]--
	}
	for id, n := range reserved {
		for range n {
			f.Release(id)
		}
	}
}
