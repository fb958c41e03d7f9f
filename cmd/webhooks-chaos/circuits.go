package main

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/smartdrop/webhooks"
)

// circuitWatch counts the openings of each endpoint's circuit two ways: the producers' CircuitOpened
// hooks (reported on their stdout), and its own polls of Webhooks().Health (which also sees an opening
// by a producer killed before it could report it).
type circuitWatch struct {
	ids []string // webhook id of each endpoint

	mu          sync.Mutex
	hookOpened  []int
	hookClosed  []int
	polledOpens []int
	maxCount    []int // the most ConsecutiveFailures a poll saw
	lastState   []webhooks.CircuitState
	pollErrors  int
	polls       int
}

func newCircuitWatch(ids []string) *circuitWatch {
	n := len(ids)
	w := &circuitWatch{ids: ids, hookOpened: make([]int, n), hookClosed: make([]int, n), polledOpens: make([]int, n),
		maxCount: make([]int, n), lastState: make([]webhooks.CircuitState, n)}
	for i := range w.lastState {
		w.lastState[i] = webhooks.CircuitClosed
	}
	return w
}

// hookReport counts a producer's circuit-opened or circuit-closed line.
func (w *circuitWatch) hookReport(kind, webhookID string) {
	i := slices.Index(w.ids, webhookID)
	if i < 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if kind == "circuit-opened" {
		w.hookOpened[i]++
	} else {
		w.hookClosed[i]++
	}
}

// poll reads every endpoint's Health every 200 ms until ctx ends, counting each change from closed
// to open or probing as an opening.
func (w *circuitWatch) poll(ctx context.Context, d *webhooks.Dispatcher) {
	t := time.NewTicker(200 * time.Millisecond)
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
					w.polledOpens[i]++
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

// openings is endpoint i's openings as the hooks reported them and as the polls saw them.
func (w *circuitWatch) openings(i int) (hooks, polled int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hookOpened[i], w.polledOpens[i]
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
