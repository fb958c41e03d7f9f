package main

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/smartdrop/webhooks"
)

// circuitEvent is one thing the watcher learnt about a circuit.
type circuitEvent struct {
	at   time.Time
	kind string // "circuit-opened", "circuit-closed" (a producer's hook), or "polled-open" (a Health poll)
}

// circuitWatch records the openings of each endpoint's circuit two ways: the producers'
// CircuitOpened and CircuitClosed hooks (reported on their stdout with the time), and its own polls of
// Webhooks().Health (which also see an opening by a producer killed before it could report it).
type circuitWatch struct {
	ids []string // webhook id of each endpoint

	mu         sync.Mutex
	events     [][]circuitEvent
	maxCount   []int // the most ConsecutiveFailures a poll saw
	lastState  []webhooks.CircuitState
	pollErrors int
	polls      int
}

// pollEvery is how often the watcher reads every endpoint's Health.
const pollEvery = 200 * time.Millisecond

func newCircuitWatch(ids []string) *circuitWatch {
	n := len(ids)
	w := &circuitWatch{ids: ids, events: make([][]circuitEvent, n), maxCount: make([]int, n), lastState: make([]webhooks.CircuitState, n)}
	for i := range w.lastState {
		w.lastState[i] = webhooks.CircuitClosed
	}
	return w
}

// hookReport records a producer's circuit-opened or circuit-closed line for webhookID at at.
func (w *circuitWatch) hookReport(kind, webhookID string, at time.Time) {
	i := slices.Index(w.ids, webhookID)
	if i < 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events[i] = append(w.events[i], circuitEvent{at: at, kind: kind})
}

// poll reads every endpoint's Health every pollEvery until ctx ends, recording each change from
// closed to open or probing.
func (w *circuitWatch) poll(ctx context.Context, d *webhooks.Dispatcher) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		for i, id := range w.ids {
			callCtx, cancel := context.WithTimeout(ctx, time.Second)
			h, err := d.Webhooks().Health(callCtx, id)
			cancel()
			w.mu.Lock()
			w.polls++
			if err != nil {
				w.pollErrors++ // Redis down: the hooks still count
			} else {
				if h.State != webhooks.CircuitClosed && w.lastState[i] == webhooks.CircuitClosed {
					w.events[i] = append(w.events[i], circuitEvent{at: time.Now(), kind: "polled-open"})
				}
				w.lastState[i] = h.State
				w.maxCount[i] = max(w.maxCount[i], h.ConsecutiveFailures)
			}
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// openings is endpoint i's circuit openings: reported by hooks, seen by polls, and how many of them
// no run of failures explains.
type openings struct {
	hooks, polled, unexplained int
}

// assess counts endpoint i's openings; an opening is explained when the receiver saw a long run of
// failures (longRuns: when each failed request of such a run was answered) within window before it.
// A hook's opening while the circuit is open (a failed probe) shares the first opening's explanation;
// a poll that sees it open counts only when no hook reported that opening.
func (w *circuitWatch) assess(i int, longRuns []time.Time, window time.Duration) openings {
	w.mu.Lock()
	events := slices.Clone(w.events[i])
	w.mu.Unlock()
	slices.SortStableFunc(events, func(a, b circuitEvent) int { return a.at.Compare(b.at) })
	near := func(times []time.Time, at time.Time, before, after time.Duration) bool {
		return slices.ContainsFunc(times, func(t time.Time) bool { return !t.Before(at.Add(-before)) && !t.After(at.Add(after)) })
	}
	explained := func(at time.Time) bool { return near(longRuns, at, window, 100*time.Millisecond) }
	var hookOpens []time.Time
	for _, e := range events {
		if e.kind == "circuit-opened" {
			hookOpens = append(hookOpens, e.at)
		}
	}
	var o openings
	open := false
	for _, e := range events {
		switch e.kind {
		case "circuit-opened":
			o.hooks++
			if !open && !explained(e.at) {
				o.unexplained++
			}
			open = true
		case "circuit-closed":
			open = false
		case "polled-open":
			if open || near(hookOpens, e.at, window, window) {
				continue // a hook reported it
			}
			o.polled++
			if !explained(e.at) {
				o.unexplained++
			}
		}
	}
	return o
}

// maxFailures is the most consecutive failures the polls saw the breaker count for endpoint i.
func (w *circuitWatch) maxFailures(i int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxCount[i]
}

// pollCounts is how many Health reads the watcher made, and how many failed.
func (w *circuitWatch) pollCounts() (polls, errors int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.polls, w.pollErrors
}
