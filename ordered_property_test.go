package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// orderChecker is an endpoint for ordered events (Data {"key", "n"}: the n-th event of key) behind
// several webhooks (one URL path each). Per (webhook, key) it checks that no two requests are ever
// in flight at once, and that every attempt of event n comes after event n-1's final answer, its 2xx.
// It fails a share of an event's first failFirst requests and takes a variable time. (A request can
// fail before it reaches the receiver, under load; so that the Dispatcher, which counts those too,
// never gives an event up while the receiver awaits its retry, failFirst stays well below the retry
// schedule's length. Failing for good is TestOrderedHeadFailingForGood's.)
// Delivery is at least once: an attempt whose answer did not reach the Dispatcher within
// Options.Timeout (a loaded machine: the test's timeout is short), or whose outcome was not recorded
// within its lease (a Redis restart), is made again, so the event last answered may come again
// (counted in repeats) — but never an earlier one, and never its successor before it.
type orderChecker struct {
	srv       *httptest.Server
	failFirst int     // an event's requests after these are answered 2xx
	failRate  float64 // the share of its first failFirst requests answered 500

	mu         sync.Mutex
	inFlight   map[string]bool // (webhook, key) -> a request is at the endpoint
	final      map[string]int  // (webhook, key) -> the last event answered finally
	attempts   map[string]int  // delivery id -> attempts seen
	finals     int             // events answered finally, over every (webhook, key)
	repeats    []string        // delivery ids of requests of an event already answered finally
	violations []string        // the first 20
	violated   int
}

// violate records a broken guarantee.
func (c *orderChecker) violate(format string, args ...any) {
	if c.violated++; c.violated <= 20 {
		c.violations = append(c.violations, fmt.Sprintf(format, args...))
	}
}

func newOrderChecker(t *testing.T, failFirst int, failRate float64) *orderChecker {
	c := &orderChecker{failFirst: failFirst, failRate: failRate, inFlight: map[string]bool{}, final: map[string]int{},
		attempts: map[string]int{}}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *orderChecker) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var evt struct {
		Data struct {
			Key string `json:"key"`
			N   int    `json:"n"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &evt)
	seq := r.URL.Path + " " + evt.Data.Key
	c.mu.Lock()
	if c.inFlight[seq] {
		c.violate("%s: event %d sent while another is in flight", seq, evt.Data.N)
	}
	c.inFlight[seq] = true
	last, ok := c.final[seq]
	if !ok {
		last = -1
	}
	resent := evt.Data.N == last
	if resent {
		c.repeats = append(c.repeats, r.Header.Get("webhook-id"))
	}
	if evt.Data.N != last+1 && !resent {
		c.violate("%s: event %d sent when the last final answer was event %d's", seq, evt.Data.N, last)
	}
	c.attempts[r.Header.Get("webhook-id")]++
	attempt := c.attempts[r.Header.Get("webhook-id")]
	fail := attempt <= c.failFirst && rand.Float64() < c.failRate
	c.mu.Unlock()

	time.Sleep(time.Duration(rand.IntN(8)) * time.Millisecond)

	c.mu.Lock()
	c.inFlight[seq] = false
	if !fail && !resent {
		c.final[seq] = evt.Data.N
		c.finals++
	}
	c.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusInternalServerError)
	}
}

func (c *orderChecker) answered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.finals
}

// TestOrderedDeliveryIsSequentialAcrossReplicas is the proof of ordered delivery: three Dispatchers
// on separate Redis clients, each running Run, two webhooks, 10 keys (20 with WEBHOOKS_LONG_TESTS) whose events are dispatched in
// sequence by producers (alternately with Dispatch and Enqueue, each through another Dispatcher), a
// receiver that fails 30% of requests and takes a variable time. Per (webhook, key) no two requests
// are ever in flight at once, every attempt of event n comes after event n-1's final answer, and
// every event is delivered. Also with a Redis restart mid-run (miniredis only). In both, an event may
// be sent again after its final answer (at least once: see orderChecker), but never an earlier one,
// and never its successor before it.
func TestOrderedDeliveryIsSequentialAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		restart bool
	}{{"steady", false}, {"redis restart", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTestRedis(t)
			if tc.restart && tr.mini == nil {
				t.Skip("restarts the embedded miniredis")
			}
			checkOrderedDelivery(t, tr, tc.restart)
		})
	}
}

func checkOrderedDelivery(t *testing.T, tr *testRedis, restart bool) {
	const perKey, replicas = 8, 3
	keys := sized(10, 20)
	ms := time.Millisecond
	schedule := []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms}
	checker := newOrderChecker(t, 2, 0.3)
	opts := Options{RetrySchedule: schedule, Timeout: 500 * time.Millisecond, Concurrency: 8}
	var ds []*Dispatcher
	for range replicas {
		ds = append(ds, newTestDispatcherOn(t, tr.newClient(t), tr, opts))
	}
	var hooks []*Webhook
	for _, path := range []string{"/a", "/b"} {
		wh, err := ds[0].Webhooks().Create(context.Background(), Webhook{URL: checker.srv.URL + path, Events: []string{"seq.*"}})
		require.NoError(t, err)
		hooks = append(hooks, wh)
	}
	ctx, stop := context.WithCancel(context.Background())
	var workers sync.WaitGroup
	for _, d := range ds {
		workers.Go(func() { _ = d.Run(ctx) })
	}
	defer func() { stop(); workers.Wait() }()

	var producers sync.WaitGroup
	for k := range keys {
		producers.Go(func() {
			for n := range perKey {
				evt := Event{Type: "seq.event", ID: fmt.Sprintf("k%02d-%d", k, n), OrderKey: fmt.Sprintf("key-%02d", k),
					Data: map[string]any{"key": fmt.Sprintf("key-%02d", k), "n": n}}
				d := ds[(k+n)%replicas]
				send := d.Dispatch
				if n%2 == 1 {
					send = d.Enqueue
				}
				// Not accepted (Redis restarting): dispatch it again, which is safe; bounded.
				for try := 0; try < 200; try++ {
					if _, err := send(context.Background(), evt); err == nil {
						break
					}
					time.Sleep(25 * time.Millisecond)
				}
			}
		})
	}
	if restart {
		time.Sleep(150 * time.Millisecond)
		tr.mini.Close()
		time.Sleep(300 * time.Millisecond)
		require.NoError(t, tr.mini.Restart())
	}
	producers.Wait()
	want := len(hooks) * keys * perKey
	// A bound, not a figure: under -race on a loaded machine a run takes up to a minute.
	eventually(t, 3*time.Minute, func() bool { return checker.answered() >= want }, "every event answered finally")

	checker.mu.Lock()
	assert.Zero(t, checker.violated, "violations, the first ones: %q", checker.violations)
	for _, wh := range hooks {
		for k := range keys {
			seq := strings.TrimPrefix(wh.URL, checker.srv.URL) + fmt.Sprintf(" key-%02d", k)
			assert.Equal(t, perKey-1, checker.final[seq], seq)
		}
	}
	repeats := checker.repeats
	checker.mu.Unlock()
	for _, id := range repeats { // at least once: say why, from the record's history
		dl, err := ds[0].Deliveries().Get(context.Background(), id)
		require.NoError(t, err)
		var tries []string
		for _, a := range dl.History {
			tries = append(tries, fmt.Sprintf("%d %q", a.StatusCode, a.Error))
		}
		t.Logf("%s repeated an event already answered; its attempts: %s", id, strings.Join(tries, ", "))
	}
	for _, wh := range hooks {
		for k := range keys {
			for n := range perKey {
				var dl *Delivery
				eventually(t, 10*time.Second, func() bool {
					var err error
					dl, err = ds[0].Deliveries().Find(context.Background(), wh.ID, fmt.Sprintf("k%02d-%d", k, n))
					return err == nil && dl.Status != StatusPending
				}, "the delivery is recorded final")
				checker.mu.Lock()
				if seen := checker.attempts[dl.ID]; seen != dl.Attempts {
					t.Logf("%s: the receiver saw %d requests, the record counts %d attempts (an outcome lost)", dl.ID, seen, dl.Attempts)
				}
				checker.mu.Unlock()
			}
		}
	}
}
