package webhooks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInFlightCapTracksHealth: a webhook's limit starts at MaxInFlightPerWebhook; a fast success
// (within Timeout/4) raises it by one while the webhook has held at least half of it since it last
// changed; a slow success or a failure lowers it by a tenth (at least one), never below the cap; a
// webhook holding attempts that frees no slot for Timeout/2 drops to the cap at once.
func TestInFlightCapTracksHealth(t *testing.T) {
	t.Parallel()
	const slow = 500 * time.Millisecond
	clock := newTestClock()
	f := newInFlight(4, 4*slow, clock.Now) // Timeout 2s: fast within 500ms, stalled after 1s
	require.Equal(t, slow, f.fast)
	require.Equal(t, 2*slow, f.stall)
	require.Equal(t, 4*slow, f.maxWait)
	type step struct {
		name    string
		do      func()
		room    int
		holding int
	}
	fast := func() { f.observe("w", true, slow-time.Millisecond) }
	slowOK := func() { f.observe("w", true, slow) }
	failed := func() { f.observe("w", false, time.Millisecond) }
	take := func(n int) func() { return func() { require.Equal(t, n, f.take("w", n)) } }
	release := func(n int) func() {
		return func() {
			for range n {
				f.release("w")
			}
		}
	}
	for _, s := range []step{
		{"unknown: the cap", func() {}, 4, 0},
		{"the cap taken", func() { require.Equal(t, 4, f.take("w", 100)); require.Zero(t, f.take("w", 1)) }, 0, 4},
		{"a fast success while busy raises it", fast, 1, 4},
		{"and again: 4 of 5 held is busy", fast, 2, 4},
		{"slots freed", release(4), 6, 0},
		{"busy since the last change: raised", fast, 7, 0},
		{"not busy since: not raised", fast, 7, 0},
		{"3 of 7 held is not busy", take(3), 4, 3},
		{"still not raised", fast, 4, 3},
		{"4 of 7 is busy", take(1), 3, 4},
		{"raised", fast, 4, 4},
		{"a slow success lowers it", slowOK, 3, 4},
		{"a failure lowers it", failed, 2, 4},
		{"failures stop at the cap", func() { failed(); failed(); failed() }, 0, 4},
		{"a fast success while busy", fast, 1, 4},
		{"Timeout/2 less a tick with no slot freed: not stalled", func() { clock.Advance(2*slow - time.Millisecond) }, 1, 4},
		{"stalled: the cap at once", func() { clock.Advance(time.Millisecond) }, 0, 4},
		{"a slot freed", release(1), 1, 3},
		{"all freed", release(3), 4, 0},
	} {
		s.do()
		assert.Equal(t, s.room, f.room("w"), s.name)
		f.mu.Lock()
		held := 0
		if w := f.hooks["w"]; w != nil {
			held = w.n
		}
		f.mu.Unlock()
		assert.Equal(t, s.holding, held, s.name)
	}
	f.mu.Lock()
	assert.Empty(t, f.hooks, "a webhook holding nothing, at the cap, is forgotten")
	f.mu.Unlock()
}

// TestInFlightLimitIsBoundedByUse: whatever the order of takes, releases, outcomes and stalls, a
// webhook's limit stays within [cap, fastInFlightFactor × cap] and at most twice the most attempts it
// has held at once, plus one; no take goes past the limit; an entry is forgotten only when it holds
// nothing. (Random operations, seeded.)
func TestInFlightLimitIsBoundedByUse(t *testing.T) {
	t.Parallel()
	for _, capacity := range []int{1, 3, 16} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			t.Parallel()
			const slow = 100 * time.Millisecond
			clock := newTestClock()
			f := newInFlight(capacity, 4*slow, clock.Now)
			rng := rand.New(rand.NewPCG(uint64(capacity), 20))
			peak, held, grew := 0, 0, false
			for i := range 20_000 {
				switch op := rng.IntN(10); {
				case op < 3:
					got := f.take("w", 1+rng.IntN(2*capacity))
					held += got
					if got > 0 {
						f.mu.Lock()
						require.LessOrEqual(t, f.hooks["w"].n, f.hooks["w"].limit, "step %d: a take stays within the limit", i)
						f.mu.Unlock()
					}
				case op < 6 && held > 0:
					f.release("w")
					held--
				case op < 9:
					ok := rng.IntN(20) > 0
					took := time.Duration(rng.IntN(int(slow * 5 / 4)))
					f.observe("w", ok, took)
				default:
					clock.Advance(time.Duration(rng.IntN(int(slow))))
				}
				peak = max(peak, held)
				f.mu.Lock()
				if w := f.hooks["w"]; w != nil {
					require.Equal(t, held, w.n, "step %d", i)
					require.GreaterOrEqual(t, w.limit, capacity, "step %d", i)
					require.LessOrEqual(t, w.limit, fastInFlightFactor*capacity, "step %d", i)
					require.LessOrEqual(t, w.limit, max(capacity, 2*peak+1), "step %d: bounded by use", i)
					grew = grew || w.limit > capacity
				} else {
					require.Zero(t, held, "step %d: forgotten only holding nothing", i)
				}
				f.mu.Unlock()
			}
			assert.True(t, grew, "the walk raised the limit")
		})
	}
}

// TestInFlightWaitersAreServedInTurn: callers at the limit get slots first come, first served, as
// the webhook frees them or its limit is raised, for as long as it keeps freeing them (each within
// Timeout/2 of the last), up to Timeout in all since the call began to wait; a caller gives up once the
// webhook is stalled (Timeout/2 with no slot freed), or when its context ends.
func TestInFlightWaitersAreServedInTurn(t *testing.T) {
	t.Parallel()
	const slow = 100 * time.Millisecond
	clock := newTestClock()
	f := newInFlight(1, 4*slow, clock.Now) // stalled after 200ms, waits 400ms in all
	require.Equal(t, 1, f.take("w", 1))
	waiting := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.hooks["w"].waiters)
	}
	got := make(chan int, 8)
	ctx, cancel := context.WithCancel(context.Background()) // ends the waits of a test that failed
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range 4 { // queued in this order
		wg.Go(func() {
			if f.acquire(ctx, "w", clock.Now()) {
				got <- i
			} else {
				got <- -1 - i
			}
		})
		eventually(t, 5*time.Second, func() bool { return waiting() == i+1 }, "queued")
	}
	clock.Advance(2 * slow * 9 / 10)
	f.release("w")
	assert.Equal(t, 0, <-got, "the first queued gets the freed slot")
	clock.Advance(2 * slow * 9 / 10)
	f.observe("w", true, time.Millisecond) // busy: 1 of 1 held; the limit is raised to 2
	assert.Equal(t, 1, <-got, "the second gets the added slot, more than Timeout/2 after it queued: the webhook progressed")
	clock.Advance(2 * slow / 10) // 380ms after they queued
	f.release("w")
	assert.Equal(t, 2, <-got, "the third, waiting longer than Timeout/2 while slots were freed")
	clock.Advance(2 * slow / 10) // 400ms: Timeout in all
	assert.Equal(t, -4, <-got, "the fourth gives up after Timeout in all")

	// Stalled: Timeout/2 with no slot freed.
	require.Zero(t, f.room("w"))
	wg.Go(func() { got <- map[bool]int{true: 1, false: 0}[f.acquire(ctx, "w", clock.Now())] })
	eventually(t, 5*time.Second, func() bool { return waiting() == 1 }, "queued")
	clock.Advance(2 * slow)
	assert.Equal(t, 0, <-got, "a caller gives up once the webhook is stalled")
	assert.Equal(t, -1, f.room("w"), "stalled: the cap, and it holds 2")

	f.release("w") // progress: not stalled, at the cap, holding 1
	ctx2, cancel2 := context.WithCancel(ctx)
	wg.Go(func() { got <- map[bool]int{true: 1, false: 0}[f.acquire(ctx2, "w", clock.Now())] })
	eventually(t, 5*time.Second, func() bool { return waiting() == 1 }, "queued")
	cancel2()
	assert.Equal(t, 0, <-got, "a caller whose context ends gives up")
	assert.Zero(t, waiting())
}

// TestFastWebhooksGetTheirFirstAttemptsInline (DESIGN guarantee 1): with every default, 64 goroutines
// dispatching to four healthy webhooks make at least 99% of the first attempts inline: callers at a
// webhook's limit wait in turn for the slots its attempts free, and the limit grows with its successes.
// The verdict does not hang on how fast the machine runs the attempts, only on each webhook ending one
// at least every Timeout/2 (7.5s). (Not parallel: 64 callers for seconds would slow the suite's
// timing-bound tests, not this one.)
func TestFastWebhooksGetTheirFirstAttemptsInline(t *testing.T) {
	const callers, events, hooks = 64, 1000, 4
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{Timeout: DefaultTimeout, BreakAfter: DefaultBreakAfter})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	for range hooks {
		_, err := d.Webhooks().Create(ctx, Webhook{URL: srv.URL, Events: []string{"*"}})
		require.NoError(t, err)
	}
	var next, pairs, deferred atomic.Int64
	var reasons sync.Map
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for i := next.Add(1); i <= events; i = next.Add(1) {
				res, err := d.Dispatch(ctx, Event{Type: "e", ID: fmt.Sprintf("in-%d", i)})
				if !assert.NoError(t, err) {
					return
				}
				for _, r := range res {
					pairs.Add(1)
					if errors.Is(r.Err, ErrDeferred) {
						deferred.Add(1)
						reasons.Store(r.Err.Error()[len("webhooks: delivery ")+len(r.Delivery.ID):], true)
					}
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d of %d first attempts deferred (%.2f%% inline)", deferred.Load(), pairs.Load(),
		100*float64(pairs.Load()-deferred.Load())/float64(pairs.Load()))
	reasons.Range(func(k, _ any) bool { t.Log("deferred:", k); return true })
	require.EqualValues(t, events*hooks, pairs.Load())
	assert.LessOrEqual(t, deferred.Load(), int64(events*hooks/100), "at least 99% inline")
}

// TestHungWebhookHoldsItsCapInline: concurrent Dispatch calls to a webhook whose every request hangs
// from the start make at most MaxInFlightPerWebhook requests to it at once, with a cap set and with the
// default one; the other calls wait until the webhook is stalled (Timeout/2 with no attempt ended),
// then defer their attempts to the worker: recorded and pending.
func TestHungWebhookHoldsItsCapInline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		cap, calls int // cap 0: the default, Concurrency/4 = 16
		holds      int
	}{
		{"a cap of 3", 3, 12, 3},
		{"the default cap", 0, 48, DefaultConcurrency / 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			// A long Timeout: no attempt deferred for lease margin on a loaded machine.
			d := newTestDispatcher(t, tr, Options{Timeout: 10 * time.Second, MaxInFlightPerWebhook: tc.cap})
			rc := newReceiver(t)
			release := make(chan struct{})
			free := sync.OnceFunc(func() { close(release) })
			var c concurrency
			hold(rc, release, &c)
			mustCreate(t, d, rc, "*")
			var wg sync.WaitGroup
			defer wg.Wait()
			defer free() // first: a test that failed lets its calls end
			var deferred atomic.Int32
			for i := range tc.calls {
				wg.Go(func() {
					res, err := d.Dispatch(ctx, Event{Type: "e", ID: fmt.Sprintf("h-%d", i)})
					if !assert.NoError(t, err) {
						return
					}
					if res[0].Err != nil {
						assert.ErrorIs(t, res[0].Err, ErrDeferred)
						assert.Contains(t, res[0].Err.Error(), "in-flight cap")
						assert.Equal(t, StatusPending, res[0].Delivery.Status)
						deferred.Add(1)
					}
				})
			}
			want := int32(tc.calls - tc.holds)
			eventually(t, 20*time.Second, func() bool { return deferred.Load() == want }, fmt.Sprintf("all but %d deferred", tc.holds))
			// The inline attempts all reach the receiver, and are held there, before it lets them go.
			eventually(t, 5*time.Second, func() bool { return c.now.Load() == int32(tc.holds) }, fmt.Sprintf("%d requests held at once", tc.holds))
			free()
			wg.Wait()
			assert.Equal(t, int32(tc.holds), c.peak.Load(), "%d requests at once, no more", tc.holds)
			assert.Equal(t, want, deferred.Load())
		})
	}
}

// TestHungAfterFastWebhookHoldsItsLimit: a webhook fast under a burst raises its limit above
// MaxInFlightPerWebhook (at most 16 × the cap); when it then hangs, a burst of Dispatch calls holds
// exactly the limit it had reached, no more; once it is stalled (Timeout/2 with no attempt ended) its
// limit is the cap again, so further calls start nothing while it holds more than that, and a burst
// after its hung attempts ended holds at most the cap.
func TestHungAfterFastWebhookHoldsItsLimit(t *testing.T) {
	t.Parallel()
	const capacity, callers, events = 4, 32, 400
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{Timeout: 6 * time.Second, MaxInFlightPerWebhook: capacity})
	rc := newReceiver(t)
	w := mustCreate(t, d, rc, "*")
	flight := func() (held, limit int) { // as the next caller sees it
		f := d.flights
		f.mu.Lock()
		defer f.mu.Unlock()
		if x := f.hooks[w.ID]; x != nil {
			return x.n, f.limitOf(x, f.now())
		}
		return 0, capacity
	}
	// burst starts n concurrent Dispatch calls, one event each, counting those deferred.
	burst := func(prefix string, n int, deferred *atomic.Int32) *sync.WaitGroup {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res, err := d.Dispatch(ctx, Event{Type: "e", ID: fmt.Sprintf("%s-%d", prefix, i)})
				if assert.NoError(t, err) && errors.Is(res[0].Err, ErrDeferred) {
					deferred.Add(1)
				}
			})
		}
		return &wg
	}

	// Fast, under a burst of 32 callers: the limit grows past the cap.
	sendSpread(t, []*Dispatcher{d}, callers, events, "fast", false, nil)
	_, reached := flight()
	t.Logf("fast: limit %d (cap %d)", reached, capacity)
	require.Greater(t, reached, capacity, "a fast webhook under a burst raises its limit")
	require.LessOrEqual(t, reached, fastInFlightFactor*capacity)

	// Hung: a burst of 3 × the limit reached holds exactly that limit; once the webhook is stalled
	// the others are deferred and its limit is the cap again.
	release := make(chan struct{})
	free := sync.OnceFunc(func() { close(release) })
	var hung concurrency
	hold(rc, release, &hung)
	var deferred, stalled atomic.Int32
	calls := burst("hung", 3*reached, &deferred)
	defer calls.Wait()
	defer free() // first: a test that failed lets its calls end
	eventually(t, 10*time.Second, func() bool { return hung.now.Load() == int32(reached) }, "the limit reached, held")
	eventually(t, 10*time.Second, func() bool { return deferred.Load() == int32(2*reached) }, "the others deferred")
	_, limit := flight()
	assert.Equal(t, capacity, limit, "stalled: the cap again")
	burst("stalled", 2*capacity, &stalled).Wait()
	assert.Equal(t, int32(2*capacity), stalled.Load(), "a stalled webhook holding more than the cap starts nothing")
	free()
	calls.Wait()
	assert.Equal(t, int32(2*reached), deferred.Load())
	assert.Equal(t, int32(reached), hung.peak.Load(), "at most the limit it had reached, at once")

	// Hung again after its hung attempts ended: a burst holds exactly the cap.
	eventually(t, 10*time.Second, func() bool { n, _ := flight(); return n == 0 }, "the held attempts ended")
	release2 := make(chan struct{})
	free2 := sync.OnceFunc(func() { close(release2) })
	var again concurrency
	hold(rc, release2, &again)
	var deferred2 atomic.Int32
	calls2 := burst("again", 4*capacity, &deferred2)
	defer calls2.Wait()
	defer free2()
	eventually(t, 10*time.Second, func() bool { return again.now.Load() == capacity }, "the cap held")
	eventually(t, 10*time.Second, func() bool { return deferred2.Load() == 3*capacity }, "the others deferred")
	free2()
	calls2.Wait()
	assert.Equal(t, int32(capacity), again.peak.Load(), "a stalled webhook's limit is the cap")
}

// TestWaitingForASlotTakesNothingFromTheLease: calls that wait their turn for a webhook's one slot
// longer than an inline lease's margin (Timeout/2 beyond the attempt) still make their attempts
// inline, one at a time: the lease starts once a call has its slots.
func TestWaitingForASlotTakesNothingFromTheLease(t *testing.T) {
	t.Parallel()
	const timeout, answer, calls = 4 * time.Second, 1200 * time.Millisecond, 3 // the last waits about 2.4s
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{Timeout: timeout, MaxInFlightPerWebhook: 1})
	require.Equal(t, timeout/2, (d.lease-timeout)/2, "the lease's margin beyond an attempt")
	rc := newReceiver(t)
	var c concurrency
	rc.setHook(func(*http.Request) { c.enter(); defer c.leave(); time.Sleep(answer) }) // a slow success: the limit stays 1
	mustCreate(t, d, rc, "*")
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			res, err := d.Dispatch(ctx, Event{Type: "e", ID: fmt.Sprintf("l-%d", i)})
			if assert.NoError(t, err) {
				assert.NoError(t, res[0].Err, "attempted inline")
				assert.Equal(t, StatusSuccess, res[0].Delivery.Status)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, calls, rc.count())
	assert.Equal(t, int32(1), c.peak.Load(), "one at a time")
}

// TestOptionsMinRetentionIsNewsFloor: for each option set, Retention = o.MinRetention() passes New and
// one millisecond less fails with an error naming that number.
func TestOptionsMinRetentionIsNewsFloor(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"defaults (breaker on)", Options{}},
		{"breaker off", Options{BreakAfter: -1, DisableAfter: -1}},
		{"breaker off, DisableAfter set", Options{BreakAfter: -1, DisableAfter: time.Hour}},
		{"short schedule and timeout", Options{RetrySchedule: []time.Duration{time.Second}, Timeout: 100 * time.Millisecond, DisableAfter: time.Minute}},
		{"no retries, breaker off", Options{RetrySchedule: []time.Duration{}, BreakAfter: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.KeyPrefix = tr.prefix
			floor := o.MinRetention()
			require.Positive(t, floor)
			o.Retention = floor
			_, err := New(tr.rdb, o)
			require.NoError(t, err, "Retention = MinRetention() = %s", floor)
			o.Retention = floor - time.Millisecond
			_, err = New(tr.rdb, o)
			require.ErrorIs(t, err, ErrInvalidOptions)
			assert.Contains(t, err.Error(), "MinRetention() = "+floor.String())
			if o.BreakAfter < 0 {
				schedule := o.RetrySchedule
				if schedule == nil {
					schedule = DefaultRetrySchedule()
				}
				assert.Equal(t, MinRetention(schedule, cmp.Or(o.Timeout, DefaultTimeout)), floor, "the breaker off: the retry horizon")
			}
		})
	}
}
