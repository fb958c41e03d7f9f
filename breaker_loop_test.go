package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// every3rdReceiver answers 500 to every 3rd request it receives (counted as each arrives, before
// anything else: the order the receiver saw them), 200 to the others, at once: one broken backend of
// three behind a round robin. It never fails twice in a row in its own order.
type every3rdReceiver struct {
	srv       *httptest.Server
	received  atomic.Int64
	failed    atomic.Int64
	delivered sync.Map // webhook-id -> true once answered 200
}

func newEvery3rdReceiver(t *testing.T, failAll bool) *every3rdReceiver {
	p := &every3rdReceiver{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := p.received.Add(1); failAll || n%3 == 0 {
			p.failed.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		p.delivered.Store(r.Header.Get("webhook-id"), true)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *every3rdReceiver) deliveredCount() int {
	n := 0
	p.delivered.Range(func(any, any) bool { n++; return true })
	return n
}

// breakerLoopCases are the ways both breaker loops send: inline or through the worker, by one or three
// Dispatchers.
var breakerLoopCases = []struct {
	name     string
	replicas int
	enqueue  bool
}{
	{"inline, 1 Dispatcher", 1, false},
	{"inline, 3 Dispatchers", 3, false},
	{"worker, 1 Dispatcher", 1, true},
	{"worker, 3 Dispatchers", 3, true},
}

// TestBreakerLoopNeverOpensOnEvery3rdFailure (DESIGN guarantee 4, issue 46): the way the breaker
// broke. A real HTTP receiver answers 500 to every 3rd request it receives, so it never fails twice in
// a row; 16 goroutines dispatch inline, or enqueue for Run, through one or three Dispatchers (separate
// Redis clients, each running Run), BreakAfter 5, on the test's Redis (WEBHOOKS_REDIS_ADDR: a real
// one). Nothing else orders the answers: the receiver does not wait for the library, so answers reach
// the library, and their counts reach Redis, in whatever order the scheduler gives them. In every one
// of the runs (a fresh webhook each) the circuit never opens, and every event is delivered. On a real
// Redis 20 runs of 1,500 events per case with WEBHOOKS_LONG_TESTS (CI), 2 of 300 without; on miniredis
// 2 runs of 300 with it, 1 of 100 without.
func TestBreakerLoopNeverOpensOnEvery3rdFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range breakerLoopCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			// The loop's point is a real Redis's ordering (the size there). Miniredis, inside
			// this -race process, took 16 min for it, and its ordering did not open the circuit even
			// with the rule undone (Sends never holding a failure, every count stamped as answered).
			// There TestFlakyWebhookKeepsItsCircuitClosed sends this pattern the same four ways, and its
			// BreakAfter-1 case fails with the rule undone so. Without WEBHOOKS_LONG_TESTS it sends 100
			// here, as that test's every-3rd cases do.
			runs, events := sized(1, 2), sized(100, 300)
			if tr.mini == nil {
				runs, events = sized(2, 20), sized(300, 1500)
			}
			var opened atomic.Int32
			var ds []*Dispatcher
			for range tc.replicas {
				ds = append(ds, newTestDispatcherOn(t, tr.newClient(t), tr, Options{BreakAfter: DefaultBreakAfter,
					Concurrency: 16, BreakFor: time.Minute, Timeout: 10 * time.Second,
					RetrySchedule: slices.Repeat([]time.Duration{10 * time.Millisecond}, 40),
					Hooks:         Hooks{CircuitOpened: func(string, time.Time) { opened.Add(1) }}}))
			}
			stop := runReplicas(t, ds)
			defer stop()
			openedIn := 0
			for run := range runs {
				rc := newEvery3rdReceiver(t, false)
				w, err := ds[0].Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{fmt.Sprintf("e%d", run)}})
				require.NoError(t, err)
				before := opened.Load()
				start := time.Now()
				sendSpreadType(t, ds, 16, events, fmt.Sprintf("e%d", run), fmt.Sprintf("r%d", run), tc.enqueue,
					func() bool { return opened.Load() == before })
				// Bounded by progress: each wait ends when a delivery lands or the circuit opens, and
				// gives up after 10 s with neither.
				last, lastAt := -1, time.Now()
				for n := rc.deliveredCount(); n < events && opened.Load() == before && time.Since(lastAt) < 10*time.Second; n = rc.deliveredCount() {
					if n != last {
						last, lastAt = n, time.Now()
					}
					time.Sleep(5 * time.Millisecond)
				}
				h, err := ds[0].Webhooks().Health(ctx, w.ID)
				require.NoError(t, err)
				t.Logf("run %d: received %d (%d answered 500), delivered %d of %d in %s, circuit %s",
					run, rc.received.Load(), rc.failed.Load(), rc.deliveredCount(), events,
					time.Since(start).Round(time.Millisecond), h.State)
				if opened.Load() != before || h.State != CircuitClosed {
					openedIn++
					continue
				}
				assert.Equal(t, events, rc.deliveredCount(), "run %d: every event delivered", run)
				assert.Less(t, h.ConsecutiveFailures, DefaultBreakAfter, "run %d", run)
			}
			assert.Zero(t, openedIn, "runs of %d in which the circuit opened on a receiver that never failed twice in a row", runs)
		})
	}
}

// TestBreakerLoopOpensOnAllFailing (DESIGN guarantee 4's other side): the same loop's receiver failing
// every request opens the circuit once, inline and through the worker, one and three Dispatchers, by
// the time it has received at most BreakAfter requests plus twice those in flight (16 goroutines
// inline; each Dispatcher's in-flight floor, Concurrency/4, through the worker): a failure's count
// waits for the attempts its process sent before its answer (breaker.Sends), while the goroutine that
// made it goes on to its next attempt, so each goroutine may have one attempt out and one failure
// waiting to be counted (measured: 8 to 23 requests at the opening, BreakAfter 5, 16 goroutines).
func TestBreakerLoopOpensOnAllFailing(t *testing.T) {
	t.Parallel()
	const goroutines, concurrency = 16, 16
	for _, tc := range breakerLoopCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			rc := newEvery3rdReceiver(t, true)
			var opened atomic.Int32
			var atOpen atomic.Int64
			var ds []*Dispatcher
			for range tc.replicas {
				ds = append(ds, newTestDispatcherOn(t, tr.newClient(t), tr, Options{BreakAfter: DefaultBreakAfter,
					Concurrency: concurrency, BreakFor: time.Minute, Timeout: 10 * time.Second,
					RetrySchedule: []time.Duration{time.Hour},
					Hooks: Hooks{CircuitOpened: func(string, time.Time) {
						if opened.Add(1) == 1 {
							atOpen.Store(rc.received.Load())
						}
					}}}))
			}
			w, err := ds[0].Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"e"}})
			require.NoError(t, err)
			stop := runReplicas(t, ds)
			const events = 400
			sendSpreadType(t, ds, goroutines, events, "e", "b", tc.enqueue, func() bool { return opened.Load() == 0 })
			eventually(t, 30*time.Second, func() bool { return opened.Load() > 0 }, "the circuit opens")
			stop()
			inFlight := goroutines
			if tc.enqueue {
				inFlight = tc.replicas * max(concurrency/4, 1)
			}
			t.Logf("received %d (at opening %d), openings %d", rc.received.Load(), atOpen.Load(), opened.Load())
			assert.EqualValues(t, 1, opened.Load(), "opened once")
			assert.LessOrEqual(t, atOpen.Load(), int64(DefaultBreakAfter+2*inFlight), "opened within BreakAfter + twice the attempts in flight")
			h, err := ds[0].Webhooks().Health(ctx, w.ID)
			require.NoError(t, err)
			assert.Equal(t, CircuitOpen, h.State)
		})
	}
}
