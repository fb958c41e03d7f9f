package webhooks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCircuitCountIsExactlyConsecutive: outcomes counted from many goroutines on three clients at once
// give exactly the consecutive semantics in the order Redis ran them. Each count runs in a MULTI with an
// INCR of a key in the circuits' slot, so the test learns that order, replays it on a model (a success
// resets, a failure adds one and opens a closed circuit at BreakAfter) and checks every reply against it.
func TestCircuitCountIsExactlyConsecutive(t *testing.T) {
	t.Parallel()
	const breakAfter, clients, perClient, each = 3, 3, 5, 60
	ctx := context.Background()
	tr := newTestRedis(t)
	keys := newKeyspace(tr.prefix)
	seqKey := keys.registryTag() + ":test-seq" // same slot as the circuits
	type applied struct {
		seq  int64
		kind string
		ev   circuitEvent
	}
	var mu sync.Mutex
	var log []applied
	var wg sync.WaitGroup
	for c := range clients {
		rdb := tr.newClient(t)
		s := newCircuitStore(rdb, keys)
		require.NoError(t, countScript.Load(ctx, rdb).Err())
		for g := range perClient {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(c), uint64(g)))
				for range each {
					kind := countFailure
					if rng.IntN(5) < 2 { // 40% successes: runs of every length, openings and closings
						kind = countSuccess
					}
					outs := []countedOutcome{{webhookID: "wh_1", kind: kind}}
					now := time.Now()
					ks, args := s.countArgs(now, breakAfter, time.Minute, outs)
					var seq *redis.IntCmd
					var cmd *redis.Cmd
					_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
						seq = p.Incr(ctx, seqKey)
						cmd = countScript.EvalSha(ctx, p, ks, args...)
						return nil
					})
					if !assert.NoError(t, err) {
						return
					}
					ev, err := countReply(cmd, now, outs)
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					log = append(log, applied{seq: seq.Val(), kind: kind, ev: ev[0]})
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	require.Len(t, log, clients*perClient*each)
	slices.SortFunc(log, func(a, b applied) int { return int(a.seq - b.seq) })
	failures, open, openings := 0, false, 0
	for i, a := range log {
		require.EqualValues(t, i+1, a.seq, "every count ran once, in sequence")
		wantOpened, wantClosed := false, false
		if a.kind == countSuccess {
			wantClosed, failures, open = open, 0, false
		} else {
			failures++
			if !open && failures >= breakAfter {
				wantOpened, open = true, true
				openings++
			}
		}
		require.Equal(t, failures, a.ev.health.ConsecutiveFailures, "count after outcome %d", i)
		require.Equal(t, open, a.ev.health.State != CircuitClosed, "state after outcome %d", i)
		require.Equal(t, wantOpened, a.ev.opened, "opened by outcome %d", i)
		require.Equal(t, wantClosed, a.ev.closed, "closed by outcome %d", i)
	}
	require.Positive(t, openings, "the mix opened the circuit at least once")
	s := newCircuitStore(tr.rdb, keys)
	require.Equal(t, failures, mustReadCircuit(t, s, time.Now(), "wh_1").ConsecutiveFailures, "the stored count")
}

// patternReceiver answers request n (from 0, in the order it answers them) with 500 when fail(n), else
// 200. It answers a failure only once every request answered before it is counted in its webhook's
// circuit (finished counts them: the Dispatchers' counted hook, which runs once a count has run — an
// attempt's count goes out when the attempt ends, with its outcome's write or, for a worker's outcome
// that waits for its batch, before it: countNow), so that the successes answered between two failures
// are counted between them in Redis too: a run of failures in the circuit's order is at most two longer
// than in the receiver's. With serial set it answers every request so, one at a time: the circuit then
// counts the outcomes in exactly the order the receiver gave them.
type patternReceiver struct {
	srv      *httptest.Server
	fail     func(n int) bool
	serial   bool
	mu       sync.Mutex // held while a request waits for its turn
	answered int64
	finished atomic.Int64 // attempts counted in the circuit (the Dispatchers' counted hook)
	late     atomic.Int64 // a turn that did not come within its bound
	ok       sync.Map     // delivery id -> true once answered 200
	other    sync.Map     // errors of attempts answered neither 200 nor 500 (none expected)
}

func newPatternReceiver(t *testing.T, serial bool, fail func(n int) bool) *patternReceiver {
	p := &patternReceiver{fail: fail, serial: serial}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		n := p.answered
		failed := p.fail(int(n))
		if failed || p.serial {
			deadline := time.Now().Add(5 * time.Second)
			for p.finished.Load() < n {
				if time.Now().After(deadline) {
					p.late.Add(1)
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		p.answered++
		p.mu.Unlock()
		if failed {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		p.ok.Store(r.Header.Get("webhook-id"), true)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *patternReceiver) requests() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answered
}

func (p *patternReceiver) delivered() int {
	n := 0
	p.ok.Range(func(any, any) bool { n++; return true })
	return n
}

// TestFlakyWebhookKeepsItsCircuitClosed (DESIGN guarantee 1): a webhook whose requests never fail
// BreakAfter times in a row keeps its circuit closed, dispatched from 16 goroutines through three
// Dispatchers (separate Redis clients, each running Run): one broken backend of three behind a round
// robin (every 3rd request fails), and requests failing BreakAfter-1 times in a row then succeeding,
// answered in the order the circuit counts them.
func TestFlakyWebhookKeepsItsCircuitClosed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		breakAfter int
		events     int
		serial     bool
		fail       func(n int) bool
	}{
		{"every 3rd request fails", DefaultBreakAfter, 600, false, func(n int) bool { return n%3 == 2 }},
		{"BreakAfter-1 fail in a row, then one succeeds", 3, 150, true, func(n int) bool { return n%3 != 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			var opened atomic.Int32
			rc := newPatternReceiver(t, tc.serial, tc.fail)
			schedule := slices.Repeat([]time.Duration{10 * time.Millisecond}, 40)
			var ds []*Dispatcher
			for range 3 {
				ds = append(ds, newTestDispatcherOn(t, tr.newClient(t), tr, Options{BreakAfter: tc.breakAfter,
					BreakFor: time.Minute, Timeout: 10 * time.Second, RetrySchedule: schedule,
					Hooks: Hooks{CircuitOpened: func(string, time.Time) { opened.Add(1) },
						AttemptFinished: func(a AttemptInfo) {
							if a.StatusCode != http.StatusOK && a.StatusCode != http.StatusInternalServerError {
								rc.other.Store(a.Error, true)
							}
						}}}))
			}
			for _, d := range ds {
				d.counted = func(n int) { rc.finished.Add(int64(n)) }
			}
			w, err := ds[0].Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}})
			require.NoError(t, err)
			runCtx, stop := context.WithCancel(ctx)
			var runs sync.WaitGroup
			for _, d := range ds {
				runs.Go(func() { assert.NoError(t, d.Run(runCtx)) })
			}
			var next atomic.Int64
			var callers sync.WaitGroup
			for g := range 16 {
				callers.Go(func() {
					for i := next.Add(1); i <= int64(tc.events) && opened.Load() == 0; i = next.Add(1) {
						_, err := ds[g%3].Dispatch(ctx, Event{Type: "e", ID: fmt.Sprintf("f-%d", i)})
						assert.NoError(t, err)
					}
				})
			}
			callers.Wait()
			deadline := time.Now().Add(60 * time.Second)
			for rc.delivered() < tc.events && opened.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			stop()
			runs.Wait()
			t.Logf("requests %d, delivered %d of %d, circuit openings %d", rc.requests(), rc.delivered(), tc.events, opened.Load())
			assert.Zero(t, opened.Load(), "the circuit never opened (Hooks.CircuitOpened)")
			h, err := ds[1].Webhooks().Health(ctx, w.ID)
			require.NoError(t, err)
			assert.Equal(t, CircuitClosed, h.State)
			assert.Less(t, h.ConsecutiveFailures, tc.breakAfter)
			assert.Equal(t, tc.events, rc.delivered(), "every event delivered")
			assert.Zero(t, rc.late.Load(), "every answer that waited for the ones before to be counted saw them counted")
			rc.other.Range(func(k, _ any) bool { t.Errorf("an attempt failed outside the pattern: %v", k); return true })
		})
	}
}

// TestBrokenWebhookOpensItsCircuitAtOnce: a webhook failing every request, dispatched from 16
// goroutines through three Dispatchers, opens its circuit once, by the time it has had at most
// BreakAfter requests plus those in flight (one per goroutine); every failed attempt is in the count.
func TestBrokenWebhookOpensItsCircuitAtOnce(t *testing.T) {
	t.Parallel()
	const goroutines, events = 16, 400
	ctx := context.Background()
	tr := newTestRedis(t)
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	var opened atomic.Int32
	var atOpen atomic.Int64
	var ds []*Dispatcher
	for range 3 {
		ds = append(ds, newTestDispatcherOn(t, tr.newClient(t), tr, Options{BreakAfter: DefaultBreakAfter,
			BreakFor: time.Minute, RetrySchedule: []time.Duration{time.Hour},
			Hooks: Hooks{CircuitOpened: func(string, time.Time) {
				if opened.Add(1) == 1 {
					atOpen.Store(int64(rc.count()))
				}
			}}}))
	}
	w := mustCreate(t, ds[0], rc, "*")
	runCtx, stop := context.WithCancel(ctx)
	var runs sync.WaitGroup
	for _, d := range ds {
		runs.Go(func() { assert.NoError(t, d.Run(runCtx)) })
	}
	var next atomic.Int64
	var callers sync.WaitGroup
	for g := range goroutines {
		callers.Go(func() {
			for i := next.Add(1); i <= events; i = next.Add(1) {
				_, err := ds[g%3].Dispatch(ctx, Event{Type: "e", ID: fmt.Sprintf("b-%d", i)})
				assert.NoError(t, err)
			}
		})
	}
	callers.Wait()
	stop()
	runs.Wait()
	t.Logf("requests %d (at opening %d), openings %d", rc.count(), atOpen.Load(), opened.Load())
	require.EqualValues(t, 1, opened.Load(), "opened once, and not again without a probe")
	assert.LessOrEqual(t, atOpen.Load(), int64(DefaultBreakAfter+goroutines), "opened within BreakAfter + attempts in flight")
	h, err := ds[2].Webhooks().Health(ctx, w.ID)
	require.NoError(t, err)
	assert.Equal(t, CircuitOpen, h.State)
	assert.Equal(t, rc.count(), h.ConsecutiveFailures, "every failed attempt counted, none lost")
}

// TestCircuitCountCostsNoRoundTrip: with the breaker on, a fresh Dispatch to a healthy webhook is two
// round trips, the claim and one pipeline carrying the outcome write and the circuit count, and the
// count leaves no circuit behind.
func TestCircuitCountCostsNoRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	if tr.isCluster() {
		t.Skip("a cluster pipeline is one round trip per node, in parallel: counted per node here")
	}
	c := tr.newClient(t)
	rt := &roundTrips{}
	c.AddHook(rt)
	var script atomic.Int32
	d := newTestDispatcherOn(t, c, tr, Options{BreakAfter: DefaultBreakAfter})
	rc := newReceiver(t)
	w := mustCreate(t, d, rc, "x")
	_, err := d.Dispatch(ctx, Event{Type: "x", ID: "warm"}) // caches the subscribers and the circuit, loads the scripts
	require.NoError(t, err)
	c.AddHook(scriptCounter{sha: countScript.Hash(), n: &script})
	rt.n.Store(0)
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "fresh"})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	assert.EqualValues(t, 2, rt.n.Load(), "the claim, then the outcome and the count in one pipeline")
	assert.EqualValues(t, 1, script.Load(), "the count was sent")
	assert.False(t, tr.rdb.HExists(ctx, d.keys.circuitsKey(), w.ID).Val(), "no circuit for a healthy webhook")
}

// scriptCounter counts the runs of one script (by SHA) in pipelines.
type scriptCounter struct {
	passHook
	sha string
	n   *atomic.Int32
}

func (h scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if args := c.Args(); len(args) > 1 && fmt.Sprint(args[1]) == h.sha {
				h.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}
