package webhooks

import (
	"context"
	"sync"
	"time"
)

// inFlight counts one Dispatcher's attempts per webhook, inline and worker alike, and bounds them by
// the webhook's health: a webhook holds at most Options.MaxInFlightPerWebhook attempts, unless it is
// fast — a recorded attempt of it succeeded within fastWithin less than slowAfter ago, and none failed
// since — when it may hold up to fastInFlightFactor times as many. A hung, slow or failing webhook is
// not fast, so it holds only its own MaxInFlightPerWebhook slots; a fast one under a burst does not
// send its callers' first attempts to the worker. A webhook that hangs after being fast stops being
// fast slowAfter after its last fast success.
type inFlight struct {
	mu         sync.Mutex
	hooks      map[string]*flight
	max        int           // Options.MaxInFlightPerWebhook
	fastWithin time.Duration // a success within this is fast: Timeout/4
	slowAfter  time.Duration // how long a fast success keeps a webhook fast, and a caller waits for a slot
	now        func() time.Time
}

// flight is one webhook's attempts in flight and its latest fast success.
type flight struct {
	n        int
	fastAt   time.Time     // when its latest fast success ended, zero after a failure
	progress time.Time     // wall clock: when it last freed a slot, or took one holding none
	freed    chan struct{} // closed (and replaced) when a slot is freed or the webhook turns fast
}

// fastInFlightFactor is how many times MaxInFlightPerWebhook a fast webhook may hold.
const fastInFlightFactor = 16

// newInFlight bounds attempts by MaxInFlightPerWebhook limit for attempts of timeout: a success within
// timeout/4 is fast, and keeps its webhook fast for timeout/20 (at least 50ms, at most 1s: 750ms with
// the default Timeout).
func newInFlight(limit int, timeout time.Duration, now func() time.Time) *inFlight {
	return &inFlight{hooks: map[string]*flight{}, max: limit, fastWithin: timeout / 4,
		slowAfter: min(max(timeout/20, 50*time.Millisecond), time.Second), now: now}
}

// limit is a webhook's cap now; f.mu is held.
func (f *inFlight) limit(w *flight, now time.Time) int {
	if !w.fastAt.IsZero() && now.Sub(w.fastAt) < f.slowAfter {
		return f.max * fastInFlightFactor
	}
	return f.max
}

// get returns a webhook's entry, made if missing; f.mu is held.
func (f *inFlight) get(webhookID string) *flight {
	w := f.hooks[webhookID]
	if w == nil {
		w = &flight{freed: make(chan struct{})}
		f.hooks[webhookID] = w
	}
	return w
}

// take takes up to want slots of a webhook and returns how many it took.
func (f *inFlight) take(webhookID string, want int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.get(webhookID)
	got := min(want, f.limit(w, f.now())-w.n)
	if got <= 0 {
		f.drop(webhookID, w)
		return 0
	}
	if w.n == 0 {
		w.progress = time.Now()
	}
	w.n += got
	return got
}

// acquire takes one slot of a webhook, waiting while the webhook is at its cap for a slot to be freed
// or the webhook to turn fast. It gives up (false) once the webhook has freed no slot for slowAfter
// (its attempts in flight are slow: a hung webhook's callers wait no longer than that), or after
// maxWaitFactor × slowAfter in all.
func (f *inFlight) acquire(ctx context.Context, webhookID string) bool {
	giveUp := time.Now().Add(maxWaitFactor * f.slowAfter)
	for {
		f.mu.Lock()
		w := f.get(webhookID)
		if w.n < f.limit(w, f.now()) {
			if w.n == 0 {
				w.progress = time.Now()
			}
			w.n++
			f.mu.Unlock()
			return true
		}
		freed, wait := w.freed, min(time.Until(giveUp), time.Until(w.progress.Add(f.slowAfter)))
		f.mu.Unlock()
		if wait <= 0 {
			return false
		}
		timer := time.NewTimer(wait)
		select {
		case <-freed:
			timer.Stop()
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return false
		}
	}
}

// maxWaitFactor bounds acquire's wait: maxWaitFactor × slowAfter.
const maxWaitFactor = 4

// room is how many more attempts a webhook may start now.
func (f *inFlight) room(webhookID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.hooks[webhookID]
	if w == nil {
		return f.max
	}
	return f.limit(w, f.now()) - w.n
}

// release gives back one slot of a webhook.
func (f *inFlight) release(webhookID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.hooks[webhookID]
	if w == nil {
		return
	}
	w.n--
	w.progress = time.Now()
	f.wake(w)
	f.drop(webhookID, w)
}

// observe notes a recorded attempt of a webhook that ended at end: a success within fastWithin makes
// it fast, a failure ends that at once; a slow success leaves it to expire.
func (f *inFlight) observe(webhookID string, success bool, took time.Duration, end time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fast := success && took < f.fastWithin
	w := f.hooks[webhookID]
	switch {
	case w == nil && !fast:
		return // nothing to forget
	case w == nil:
		w = f.get(webhookID)
	}
	switch {
	case fast:
		w.fastAt = later(w.fastAt, end)
		f.wake(w)
	case !success:
		w.fastAt = time.Time{}
	}
	f.drop(webhookID, w)
}

// wake wakes the callers waiting for a slot of w; f.mu is held.
func (f *inFlight) wake(w *flight) {
	close(w.freed)
	w.freed = make(chan struct{})
}

// drop forgets a webhook's entry once it holds no slot and is not fast, and prunes the others that
// went stale when the map grows large; f.mu is held.
func (f *inFlight) drop(webhookID string, w *flight) {
	now := f.now()
	if w.n <= 0 && f.limit(w, now) == f.max {
		delete(f.hooks, webhookID)
	}
	if len(f.hooks) > 10_000 {
		for id, x := range f.hooks {
			if x.n <= 0 && f.limit(x, now) == f.max {
				delete(f.hooks, id)
			}
		}
	}
}
