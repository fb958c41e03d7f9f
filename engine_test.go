package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/worker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// concurrency tracks the requests a receiver holds at once.
type concurrency struct {
	now, peak atomic.Int32
}

func (c *concurrency) enter() {
	n := c.now.Add(1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
}
func (c *concurrency) leave() { c.now.Add(-1) }

// hold makes a receiver hold every request until release is closed (or a bound passes), counting how
// many it holds at once.
func hold(rc *receiver, release <-chan struct{}, c *concurrency) {
	rc.setHook(func(r *http.Request) {
		c.enter()
		defer c.leave()
		select {
		case <-release:
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	})
}

// TestHungSubscriberOpensItsCircuit: once a hung webhook's circuit is open, Dispatch to it and three
// healthy webhooks no longer waits for it; its deliveries are parked with their retry budget kept;
// when the subscriber recovers, one probe closes the circuit and the parked backlog is delivered.
func TestHungSubscriberOpensItsCircuit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	var opened, closed atomic.Int32
	const timeout = 400 * time.Millisecond
	d := newTestDispatcher(t, tr, Options{Timeout: timeout, BreakAfter: 2, BreakFor: time.Second,
		RetrySchedule: []time.Duration{time.Hour}, // the two attempts that open the circuit retry out of sight
		Hooks:         Hooks{CircuitOpened: func(string, time.Time) { opened.Add(1) }, CircuitClosed: func(string) { closed.Add(1) }}})
	healthy, hung := newReceiver(t), newReceiver(t)
	release := make(chan struct{})
	var c concurrency
	hold(hung, release, &c)
	for range 3 {
		mustCreate(t, d, healthy, "*")
	}
	bad := mustCreate(t, d, hung, "*")

	for i := range 2 { // two timeouts open the circuit
		_, err := d.Dispatch(ctx, Event{Type: "e", ID: fmt.Sprintf("open-%d", i)})
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, opened.Load(), "the second failed attempt opened the circuit")
	h, err := d.Webhooks().Health(ctx, bad.ID)
	require.NoError(t, err)
	require.Equal(t, CircuitOpen, h.State)

	var parked []string
	sentBefore := hung.count()
	for i := range 5 {
		res, err := d.Dispatch(ctx, Event{Type: "e", ID: fmt.Sprintf("after-%d", i)})
		require.NoError(t, err)
		// Dispatch no longer waits for the hung webhook: it sends it nothing while the circuit is open
		// (a time bound here would trip on a loaded machine; the receiver's count cannot).
		require.Equal(t, sentBefore, hung.count(), "Dispatch sent the hung webhook a request with its circuit open")
		for _, r := range res {
			if r.WebhookID != bad.ID {
				require.NoError(t, r.Err)
				require.Equal(t, StatusSuccess, r.Delivery.Status)
				continue
			}
			require.ErrorIs(t, r.Err, ErrDeferred)
			require.Equal(t, StatusPending, r.Delivery.Status)
			require.Zero(t, r.Delivery.Attempts)
			require.Contains(t, r.Delivery.LastError, "circuit open")
			parked = append(parked, r.Delivery.ID)
		}
	}
	require.Len(t, parked, 5)
	rec, err := d.deliveries.get(ctx, parked[0])
	require.NoError(t, err)
	assert.Zero(t, rec.Step, "a parked delivery keeps its retry budget")

	close(release) // the subscriber recovers
	eventually(t, 10*time.Second, func() bool {
		_, _ = d.ProcessDue(ctx)
		for _, id := range parked {
			if dl, err := d.Deliveries().Get(ctx, id); err != nil || dl.Status != StatusSuccess {
				return false
			}
		}
		return true
	}, "the parked backlog is delivered after the probe")
	assert.EqualValues(t, 1, closed.Load(), "the probe closed the circuit")
	h, err = d.Webhooks().Health(ctx, bad.ID)
	require.NoError(t, err)
	assert.Equal(t, CircuitClosed, h.State)
	assert.Equal(t, 2+5, hung.count(), "the two attempts that opened it, then each parked delivery once")
	for _, id := range parked {
		dl, err := d.Deliveries().Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, 1, dl.Attempts, "a parked delivery was sent once, when the circuit closed")
	}
}

// TestHungWebhookDoesNotHoldTheWorker: while every request to webhook A hangs, the worker delivers all
// of webhook B's due deliveries; A holds no more than the in-flight floor (Concurrency/4 = 2) requests
// at once.
func TestHungWebhookDoesNotHoldTheWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{Timeout: 15 * time.Second, Concurrency: 8}) // in-flight floor 8/4 = 2
	a, b := newReceiver(t), newReceiver(t)
	release := make(chan struct{})
	var c concurrency
	hold(a, release, &c)
	mustCreate(t, d, a, "*")
	mustCreate(t, d, b, "*")
	for i := range 40 {
		_, err := d.Enqueue(ctx, Event{Type: "e", ID: fmt.Sprintf("e-%d", i)})
		require.NoError(t, err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- d.Run(runCtx) }()
	eventually(t, 15*time.Second, func() bool { return b.count() == 40 }, "B's deliveries go out while A hangs")
	assert.LessOrEqual(t, c.peak.Load(), int32(2), "A holds at most the in-flight floor, Concurrency/4 = 2, requests")
	assert.Equal(t, int32(2), c.now.Load(), "A's requests are still hung")
	close(release)
	eventually(t, 15*time.Second, func() bool { return a.count() == 40 }, "A's deliveries follow once it recovers")
	stop()
	require.NoError(t, <-done)
	assert.LessOrEqual(t, c.peak.Load(), int32(2))
}

// TestRateLimitHoldsAcrossReplicas: three Dispatchers drain 100 deliveries (200 with
// WEBHOOKS_LONG_TESTS) to a webhook limited to 50
// requests per second: in every one-second window from the second request on, at most 50 × 1.05
// requests arrive, and all are delivered.
func TestRateLimitHoldsAcrossReplicas(t *testing.T) {
	// Not parallel: arrival times are what it checks, and a CPU shared with other tests stalls them.
	ctx := context.Background()
	tr := newTestRedis(t)
	var ds []*Dispatcher
	for range 3 {
		ds = append(ds, newTestDispatcherOn(t, tr.newClient(t), tr, Options{}))
	}
	rc := newReceiver(t)
	var mu sync.Mutex
	var arrivals []time.Time
	rc.setHook(func(*http.Request) { mu.Lock(); arrivals = append(arrivals, time.Now()); mu.Unlock() })
	_, err := ds[0].Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, RateLimit: 50})
	require.NoError(t, err)
	events := sized(100, 200) // 2 or 4 seconds at the limit (no burst)
	for i := range events {
		_, err := ds[i%3].Enqueue(ctx, Event{Type: "e", ID: fmt.Sprintf("r-%d", i)})
		require.NoError(t, err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() { assert.NoError(t, d.Run(runCtx)) })
	}
	eventually(t, 30*time.Second, func() bool { return rc.count() == events }, "all delivered")
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(arrivals); i++ {
		n := 0
		for _, at := range arrivals[i:] {
			if at.Sub(arrivals[i]) < time.Second {
				n++
			}
		}
		assert.LessOrEqual(t, float64(n), 50*1.05, "requests in the second from arrival %d", i)
	}
}

// TestEnqueueIsOneRoundTripAndWakesTheWorker: with subscribers cached, Enqueue to four webhooks costs
// one round trip and attempts nothing itself; the worker of the same process sends them.
func TestEnqueueIsOneRoundTripAndWakesTheWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	rt := &roundTrips{}
	c.AddHook(rt)
	d := newTestDispatcherOn(t, c, tr, Options{})
	d.now = newTestClock().Now // held still: the subscribers cached below stay fresh however slow the machine
	rc := newReceiver(t)
	for range 4 {
		mustCreate(t, d, rc, "x")
	}
	ids := eventIDsInShard(t, "enq", 0, 2)
	_, err := d.Enqueue(ctx, Event{Type: "x", ID: ids[0]}) // caches the subscribers, loads the script
	require.NoError(t, err)
	rt.n.Store(0)
	res, err := d.Enqueue(ctx, Event{Type: "x", ID: ids[1]})
	require.NoError(t, err)
	assert.EqualValues(t, 1, rt.n.Load(), "one round trip")
	require.Len(t, res, 4)
	for _, r := range res {
		require.NoError(t, r.Err)
		require.Equal(t, StatusPending, r.Delivery.Status)
		require.Zero(t, r.Delivery.Attempts)
	}
	assert.Zero(t, rc.count(), "Enqueue attempts nothing itself")

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- d.Run(runCtx) }()
	eventually(t, 5*time.Second, func() bool { return rc.count() == 8 }, "the worker sends every enqueued delivery")
	stop()
	require.NoError(t, <-done)
}

// TestReplicasDoNotIdleWhileDeliveriesAreDue: three replicas drain a backlog (150 deliveries; 300 with
// WEBHOOKS_LONG_TESTS), racing for the same
// deliveries; none of them waits idle (the wait for the next due time) while the schedule holds a due
// delivery (a webhook's queue holds one due and not leased: a ready score is only a lower bound).
func TestReplicasDoNotIdleWhileDeliveriesAreDue(t *testing.T) {
	t.Parallel()
	const hooks = 3
	events := sized(50, 100)
	ctx := context.Background()
	tr := newTestRedis(t)
	rc := newReceiver(t)
	var ds []*Dispatcher
	var runHooks []worker.Hooks
	var idle atomic.Int32
	for range 3 {
		d := newTestDispatcherOn(t, tr.newClient(t), tr, Options{Concurrency: 8})
		// An in-flight floor of Concurrency, not 8/4 = 2: a replica whose webhooks are all at their
		// limit waits (Idled) with deliveries due that it may not take; this test is about the others.
		setInFlightFloor(d, 8)
		runHooks = append(runHooks, worker.Hooks{Idled: func() {
			now := strconv.FormatInt(time.Now().UnixMilli(), 10)
			ids, err := tr.rdb.HKeys(ctx, d.keys.Webhooks()).Result()
			assert.NoError(t, err)
			for s := range shardCount {
				for _, id := range ids {
					if n := tr.rdb.ZCount(ctx, d.keys.Queue(s, id), "-inf", now).Val(); n > 0 {
						idle.Add(1) // a webhook had deliveries due, and this replica went idle
						return
					}
				}
			}
		}})
		ds = append(ds, d)
	}
	for range hooks {
		mustCreate(t, ds[0], rc, "*")
	}
	for i := range events {
		_, err := ds[0].Enqueue(ctx, Event{Type: "e", ID: fmt.Sprintf("b-%d", i)})
		require.NoError(t, err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() { assert.NoError(t, runWorker(runCtx, d, runHooks[i])) })
	}
	eventually(t, 20*time.Second, func() bool { return rc.count() >= events*hooks }, "the backlog is drained")
	stop()
	wg.Wait()
	assert.Equal(t, events*hooks, rc.count(), "each delivery sent once")
	assert.Zero(t, idle.Load(), "no replica waited idle while deliveries were due")
}

// TestParkingNeverOutlivesTheRecord: with the breaker on, New refuses a Retention or DisableAfter that
// would let a delivery wait parked past its record; a webhook whose failures began DisableAfter ago is
// disabled at its next failed probe and its parked deliveries then fail (they do not wait for a probe
// that cannot come); a retry that would end after the record's expiry fails at once.
func TestParkingNeverOutlivesTheRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	schedule := []time.Duration{time.Minute}
	_, err := New(tr.rdb, Options{KeyPrefix: tr.prefix, DisableAfter: -1})
	require.ErrorIs(t, err, ErrInvalidOptions, "the breaker needs DisableAfter")
	_, err = New(tr.rdb, Options{KeyPrefix: tr.prefix, RetrySchedule: schedule, DisableAfter: time.Hour,
		Retention: MinRetention(schedule, DefaultTimeout) + time.Hour})
	require.ErrorIs(t, err, ErrInvalidOptions, "Retention must cover MinRetention + DisableAfter + MaxBreakFor")
	_, err = New(tr.rdb, Options{KeyPrefix: tr.prefix, RetrySchedule: schedule, DisableAfter: time.Hour,
		Retention: MinRetention(schedule, DefaultTimeout) + time.Hour + MaxBreakFor})
	require.NoError(t, err)

	var disabled atomic.Int32
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: schedule, BreakAfter: 1, BreakFor: time.Minute,
		DisableAfter: time.Hour, Hooks: Hooks{WebhookDisabled: func(string, string) { disabled.Add(1) }}})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	w := mustCreate(t, d, rc, "*")
	_, err = d.Dispatch(ctx, Event{Type: "e", ID: "first"}) // fails: the circuit opens
	require.NoError(t, err)
	var parked []string
	for i := range 3 {
		res, err := d.Dispatch(ctx, Event{Type: "e", ID: fmt.Sprintf("parked-%d", i)})
		require.NoError(t, err)
		require.ErrorIs(t, res[0].Err, ErrDeferred, "parked behind the open circuit")
		parked = append(parked, res[0].Delivery.ID)
	}

	clock.Advance(2 * time.Hour) // past DisableAfter and the open period
	for range 5 {
		_, _ = d.ProcessDue(ctx)
	}
	got, err := d.Webhooks().Get(ctx, w.ID)
	require.NoError(t, err)
	require.True(t, got.Disabled, "the failed probe disabled the webhook failing for DisableAfter")
	assert.EqualValues(t, 1, disabled.Load())
	clock.Advance(MaxBreakFor)
	for range 5 {
		_, _ = d.ProcessDue(ctx)
	}
	for _, id := range parked {
		dl, err := d.Deliveries().Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, StatusFailed, dl.Status, "a parked delivery failed with its webhook, visibly")
		assert.Contains(t, dl.LastError, "disabled")
	}

	rec := &rdb.Record{Delivery: Delivery{ID: "dlv_x", Status: StatusPending, ExpiresAt: clock.Now().Add(30 * time.Second)}}
	o := worker.Decide(rec, worker.AttemptResult{At: clock.Now(), Code: 500, Err: "HTTP 500"}, d.opts.RetrySchedule, d.lease, d.now())
	assert.Equal(t, StatusFailed, o.Status, "a retry past the record's expiry fails now")
	assert.Contains(t, o.Err, "retention")
}

// TestDeleteForgetsTheCircuit: deleting a webhook whose circuit is open removes its circuit state,
// which has no TTL of its own.
func TestDeleteForgetsTheCircuit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{BreakAfter: 1})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	w := mustCreate(t, d, rc, "*")
	_, err := d.Dispatch(ctx, Event{Type: "e", ID: "x"})
	require.NoError(t, err)
	h, err := d.Webhooks().Health(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, CircuitOpen, h.State)
	require.NoError(t, d.Webhooks().Delete(ctx, w.ID))
	assert.False(t, tr.rdb.HExists(ctx, d.keys.Circuits(), w.ID).Val(), "the circuit is forgotten")
}
