package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failFirst makes a receiver answer 500 to the first request of every delivery and 200 after.
func failFirst(rc *receiver) {
	var mu sync.Mutex
	seen := map[string]bool{}
	rc.setHook(func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		id := r.Header.Get("webhook-id")
		if !seen[id] {
			seen[id] = true
			panic(http.ErrAbortHandler) // the connection drops: a failed attempt
		}
	})
}

// TestReplicasRetryEachDeliveryOnce: 4 replicas run the worker over 60 events × 2 webhooks whose first
// attempt fails; every pair gets exactly two requests.
func TestReplicasRetryEachDeliveryOnce(t *testing.T) {
	t.Parallel()
	const events, replicas = 60, 4
	tr := newTestRedis(t)
	opts := Options{RetrySchedule: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond}}
	var ds []*Dispatcher
	for range replicas {
		ds = append(ds, newTestDispatcherOn(t, tr.newClient(t), tr, opts))
	}
	rc := newReceiver(t)
	failFirst(rc)
	mustCreate(t, ds[0], rc, "retry.*")
	mustCreate(t, ds[0], rc, "*")

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() { assert.NoError(t, d.Run(ctx)) })
	}
	for e := range events {
		res, err := ds[e%replicas].Dispatch(context.Background(), Event{Type: "retry.me", ID: fmt.Sprintf("r-%d", e)})
		require.NoError(t, err)
		for _, r := range res {
			if r.Err != nil { // the webhook is at its in-flight limit with retries: a worker makes the attempt
				require.ErrorIs(t, r.Err, ErrDeferred)
			}
			require.Equal(t, StatusPending, r.Delivery.Status)
		}
	}
	eventually(t, 20*time.Second, func() bool { return rc.count() >= events*2*2 }, "every pair retried")
	time.Sleep(300 * time.Millisecond) // one more idle pass of every worker: nothing further may be sent
	cancel()
	wg.Wait()

	per := rc.perDelivery()
	assert.Len(t, per, events*2)
	for id, n := range per {
		assert.Equal(t, 2, n, "requests for %s", id)
	}
	list, err := ds[0].Deliveries().List(context.Background(), mustList(t, ds[0])[0].ID, 100)
	require.NoError(t, err)
	require.Len(t, list, events)
	for _, dl := range list {
		assert.Equal(t, StatusSuccess, dl.Status)
		assert.Equal(t, 2, dl.Attempts)
	}
}

func mustList(t *testing.T, d *Dispatcher) []*Webhook {
	t.Helper()
	ws, err := d.Webhooks().List(context.Background())
	require.NoError(t, err)
	return ws
}

// TestFailedStaysFailedUntilRedeliver runs the schedule out, then checks that a re-dispatch sends
// nothing and that Redeliver sends once, however many callers race it.
func TestFailedStaysFailedUntilRedeliver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute, time.Hour}})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	mustCreate(t, d, rc, "pay.*")
	evt := Event{Type: "pay.done", ID: "p-1"}
	res, err := d.Dispatch(ctx, evt)
	require.NoError(t, err)
	id := res[0].Delivery.ID

	for _, step := range []time.Duration{time.Minute, time.Hour} {
		n, err := d.ProcessDue(ctx)
		require.NoError(t, err)
		assert.Equal(t, 0, n, "nothing is due before its time")
		clock.Advance(time.Duration(float64(step)*1.2) + time.Second)
		n, err = d.ProcessDue(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	}
	dl, err := d.Deliveries().Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, StatusFailed, dl.Status)
	assert.Equal(t, 3, dl.Attempts, "every attempt is counted")
	assert.True(t, dl.NextAttemptAt.IsZero())
	assert.Len(t, dl.History, 3)
	_, _, ok := queued(t, tr, d, shardOf(evt.ID), dl.WebhookID, id)
	require.False(t, ok, "a failed delivery has no schedule entry")

	clock.Advance(24 * time.Hour)
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n)
	res, err = d.Dispatch(ctx, evt)
	require.NoError(t, err)
	require.True(t, res[0].Duplicate)
	assert.Equal(t, StatusFailed, res[0].Delivery.Status)
	assert.Equal(t, 3, rc.count(), "a re-dispatch of a failed pair sends nothing")

	rc.status.Store(http.StatusOK)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			got, err := d.Redeliver(ctx, id)
			if assert.NoError(t, err) {
				assert.Equal(t, id, got.ID)
				assert.NotEqual(t, StatusFailed, got.Status, "every caller sees the reset delivery")
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 4, rc.count(), "8 concurrent Redeliver calls send once")
	dl, err = d.Deliveries().Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, dl.Status)
	assert.Equal(t, 4, dl.Attempts, "attempts keep counting across a redelivery")
	assert.Len(t, dl.History, 4, "history is kept")
	for _, r := range rc.requests() {
		assert.Equal(t, id, r.Header.Get("webhook-id"), "the webhook-id is stable across retries and redeliveries")
	}

	again, err := d.Redeliver(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, again.Status, "a delivery that just succeeded is returned unchanged (replay.ResendQuiet)")
	assert.Equal(t, 4, rc.count())
	_, err = d.Redeliver(ctx, "dlv_00000000000000000000000000")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = d.Redeliver(ctx, "bogus")
	require.ErrorIs(t, err, ErrNotFound)
}

// TestRedeliverExtendsRecordAndBody reads the expiries of the record (the claim) and of the event body
// after a Redeliver.
func TestRedeliverExtendsRecordAndBody(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	rc := newReceiver(t)
	rc.status.Store(http.StatusBadRequest)
	mustCreate(t, d, rc, "x")
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "ext"})
	require.NoError(t, err)
	id := res[0].Delivery.ID
	clock.Advance(2 * time.Minute)
	_, err = d.ProcessDue(ctx)
	require.NoError(t, err)
	s := shardOf("ext")
	// Shorten both so an extension is visible.
	require.NoError(t, tr.rdb.PExpire(ctx, d.keys.Delivery(s, id), time.Hour).Err())
	require.NoError(t, tr.rdb.PExpire(ctx, d.keys.Event(s, "ext"), time.Hour).Err())
	_, err = d.Redeliver(ctx, id)
	require.NoError(t, err)
	ttls := tr.pttls(t, d.keys.Delivery(s, id), d.keys.Event(s, "ext"))
	recTTL, evtTTL := ttls[0], ttls[1]
	assert.Greater(t, recTTL, DefaultRetention-time.Minute)
	assert.InDelta(t, recTTL.Milliseconds(), evtTTL.Milliseconds(), 50)
}

// TestStaleLeaseCannotClobber: an attempt outlives its lease, a second worker takes the delivery over
// and succeeds; the first attempt's late failure must not overwrite that outcome.
func TestStaleLeaseCannotClobber(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute, time.Minute}})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	mustCreate(t, d, rc, "x")
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "stale"})
	require.NoError(t, err)
	id := res[0].Delivery.ID

	held, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	rc.setHook(func(r *http.Request) {
		if calls.Add(1) == 1 {
			close(held)
			<-release // the first worker's attempt hangs; it then fails with 500
		} else {
			rc.status.Store(http.StatusOK)
		}
	})
	clock.Advance(2 * time.Minute)
	staleErr := make(chan error, 1)
	go func() {
		_, err := d.ProcessDue(ctx)
		staleErr <- err
	}()
	<-held
	clock.Advance(d.lease + time.Second) // the first lease has expired
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "a second worker takes the delivery over")
	close(release)
	err = <-staleErr
	require.ErrorIs(t, err, ErrLeaseLost, "the stale worker is told its outcome was not recorded")

	dl, err := d.Deliveries().Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, dl.Status, "the newer attempt's outcome stands")
	assert.Equal(t, 200, dl.LastStatusCode)
	assert.Equal(t, 2, dl.Attempts)
}

// TestCorruptRecordIsSkipped: undecodable entries in the schedule are reported and removed; the due
// delivery beside them is delivered.
func TestCorruptRecordIsSkipped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	mustCreate(t, d, rc, "x")
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "good"})
	require.NoError(t, err)
	good := res[0].Delivery.ID

	s := shardOf("good")
	sched := d.keys.Queue(s, res[0].WebhookID)
	short, hash, garbled, gone := fmt.Sprintf("dlv_%02x%024d", s, 1), fmt.Sprintf("dlv_%02x%024d", s, 2),
		fmt.Sprintf("dlv_%02x%024d", s, 3), fmt.Sprintf("dlv_%02x%024d", s, 4)
	require.NoError(t, tr.rdb.Set(ctx, d.keys.Delivery(s, short), "garbage", time.Hour).Err())
	require.NoError(t, tr.rdb.HSet(ctx, d.keys.Delivery(s, hash), "s", "pending", "n", "many").Err())
	require.NoError(t, tr.rdb.Set(ctx, d.keys.Delivery(s, garbled), strings.Repeat("x", 40), time.Hour).Err())
	due := float64(clock.Now().UnixMilli())
	for _, id := range []string{short, hash, garbled, gone} {
		require.NoError(t, tr.rdb.ZAdd(ctx, sched, redis.Z{Score: due, Member: id}).Err())
	}
	require.NoError(t, tr.rdb.ZAdd(ctx, d.keys.Ready(s), redis.Z{Score: due, Member: res[0].WebhookID}).Err())

	rc.status.Store(http.StatusOK)
	clock.Advance(2 * time.Minute)
	n, err := d.ProcessDue(ctx)
	require.ErrorIs(t, err, ErrCorruptRecord, "corrupt records are reported")
	assert.Equal(t, 1, n, "the good delivery went on")
	dl, err := d.Deliveries().Get(ctx, good)
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, dl.Status)
	left, err := tr.rdb.ZRange(ctx, sched, 0, -1).Result()
	require.NoError(t, err)
	assert.Empty(t, left, "corrupt and expired entries leave the schedule")
	n, err = d.ProcessDue(ctx)
	require.NoError(t, err, "and are not reported again")
	assert.Equal(t, 0, n)
}

// TestDeletedOrDisabledWebhookFailsItsPendingDeliveries, and Redeliver revives them once re-enabled.
func TestDeletedOrDisabledWebhookFailsItsPendingDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	wDisabled := mustCreate(t, d, rc, "x")
	wDeleted := mustCreate(t, d, rc, "x")
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "e"})
	require.NoError(t, err)
	require.Len(t, res, 2)
	wDisabled.Disabled = true
	_, err = d.Webhooks().Update(ctx, *wDisabled)
	require.NoError(t, err)
	require.NoError(t, d.Webhooks().Delete(ctx, wDeleted.ID))

	clock.Advance(2 * time.Minute)
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, 2, rc.count(), "neither was attempted again")
	for _, r := range res {
		dl, err := d.Deliveries().Get(ctx, r.Delivery.ID)
		require.NoError(t, err)
		assert.Equal(t, StatusFailed, dl.Status)
		assert.Equal(t, 1, dl.Attempts, "a refusal is not an attempt")
		if r.WebhookID == wDeleted.ID {
			assert.Contains(t, dl.LastError, "deleted")
		} else {
			assert.Contains(t, dl.LastError, "disabled")
		}
	}

	for _, r := range res {
		before, err := d.Deliveries().Get(ctx, r.Delivery.ID)
		require.NoError(t, err)
		_, err = d.Redeliver(ctx, r.Delivery.ID)
		if r.WebhookID == wDeleted.ID {
			require.ErrorIs(t, err, ErrNotFound, "a deleted webhook's delivery cannot be redelivered")
		} else {
			require.ErrorIs(t, err, ErrWebhookDisabled, "a disabled webhook's delivery waits for it to be enabled")
		}
		after, err := d.Deliveries().Get(ctx, r.Delivery.ID)
		require.NoError(t, err)
		assert.Equal(t, before, after, "a refused Redeliver leaves the record as it was")
	}

	rc.status.Store(http.StatusOK)
	wDisabled.Disabled = false
	_, err = d.Webhooks().Update(ctx, *wDisabled)
	require.NoError(t, err)
	dl, err := d.Deliveries().Find(ctx, wDisabled.ID, "e")
	require.NoError(t, err)
	dl, err = d.Redeliver(ctx, dl.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, dl.Status, "Redeliver revives it once the webhook is enabled")
	assert.Equal(t, 3, rc.count())
}

// TestRotatedURLAndSecretApplyToTheNextAttempt: a retry goes to the webhook as it is now.
func TestRotatedURLAndSecretApplyToTheNextAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	oldRC, newRC := newReceiver(t), newReceiver(t)
	oldRC.status.Store(http.StatusInternalServerError)
	w := mustCreate(t, d, oldRC, "x")
	_, err := d.Dispatch(ctx, Event{Type: "x", ID: "moving"})
	require.NoError(t, err)

	w.URL = newRC.srv.URL
	_, err = d.Webhooks().Update(ctx, *w)
	require.NoError(t, err)
	rotated, err := d.Webhooks().RotateSecret(ctx, w.ID, 0)
	require.NoError(t, err)
	require.NotEqual(t, w.Secret, rotated.Secret)

	clock.Advance(2 * time.Minute)
	_, err = d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, oldRC.count())
	require.Equal(t, 1, newRC.count(), "the retry goes to the new URL")
	req := newRC.requests()[0]
	require.NoError(t, verifyAt(rotated.Secret, req.Header, req.Body, clock.Now()), "signed with the new secret")
	require.ErrorIs(t, verifyAt(w.Secret, req.Header, req.Body, clock.Now()), ErrInvalidSignature, "and not the old one")
}

func TestRetryAfterAndGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Second}})
	throttle := newReceiver(t)
	throttle.srv.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Retry-After", "120")
		rw.WriteHeader(http.StatusTooManyRequests)
	})
	mustCreate(t, d, throttle, "x")
	before := time.Now().Truncate(time.Millisecond) // times are kept in whole milliseconds
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "slow-down"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, StatusPending, res[0].Delivery.Status)
	assert.WithinRange(t, res[0].Delivery.NextAttemptAt, before.Add(120*time.Second), time.Now().Add(121*time.Second), "Retry-After is honoured")

	gone := newReceiver(t)
	gone.status.Store(http.StatusGone)
	w2, err := d.Webhooks().Create(ctx, Webhook{URL: gone.srv.URL, Events: []string{"y"}})
	require.NoError(t, err)
	res, err = d.Dispatch(ctx, Event{Type: "y", ID: "gone"})
	require.NoError(t, err)
	assert.Equal(t, StatusFailed, res[0].Delivery.Status, "410 fails the delivery at once")
	got, err := d.Webhooks().Get(ctx, w2.ID)
	require.NoError(t, err)
	assert.True(t, got.Disabled, "410 disables the webhook")
}

func TestRunStopsWithItsContext(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// TestExpiredRecordLeavesTheSchedule: a schedule entry whose record has expired is dropped quietly.
func TestExpiredRecordLeavesTheSchedule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	mustCreate(t, d, rc, "x")
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "exp"})
	require.NoError(t, err)
	s := shardOf("exp")
	require.NoError(t, tr.rdb.Del(ctx, d.keys.Delivery(s, res[0].Delivery.ID)).Err()) // as if expired
	clock.Advance(2 * time.Minute)
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n)
	assert.Zero(t, tr.rdb.ZCard(ctx, d.keys.Ready(s)).Val())
	assert.Equal(t, 1, rc.count())
}

// TestSendTestRetriesReachADisabledWebhook: a test delivery that failed is retried even though its
// webhook is disabled; an ordinary delivery of that webhook is not.
func TestSendTestRetriesReachADisabledWebhook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	w := mustCreate(t, d, rc, "x")
	ordinary, err := d.Dispatch(ctx, Event{Type: "x", ID: "ordinary"})
	require.NoError(t, err)
	w.Disabled = true
	_, err = d.Webhooks().Update(ctx, *w)
	require.NoError(t, err)
	test, err := d.SendTest(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, StatusPending, test.Status)

	rc.status.Store(http.StatusOK)
	clock.Advance(2 * time.Minute)
	_, err = d.ProcessDue(ctx)
	require.NoError(t, err)
	got, err := d.Deliveries().Get(ctx, test.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, got.Status, "the test delivery's retry was sent")
	got, err = d.Deliveries().Get(ctx, ordinary[0].Delivery.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusFailed, got.Status, "the ordinary delivery was not")
	assert.Equal(t, 3, rc.count())
}

// TestNoGoroutineOutlivesItsCall: hundreds of deliveries (300; 600 with WEBHOOKS_LONG_TESTS), inline
// and by the worker, leave no goroutine
// behind once Run has returned: none runs the package's code, and once idle connections are closed
// the attempts' HTTP client holds no more connection goroutines than before the load. Goroutines of
// Redis clients and servers are not counted: their pools grow with load and belong to the caller.
func TestNoGoroutineOutlivesItsCall(t *testing.T) {
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{RetrySchedule: []time.Duration{10 * time.Millisecond}})
	// Real time plus what the test adds: once every delivery is settled, the clock jumps past the
	// leases' ends rather than wait them out (4s) for the ready entries they left.
	clock := &offsetClock{}
	d.now = clock.Now
	rc := newReceiver(t)
	var calls atomic.Int32
	rc.setHook(func(r *http.Request) {
		if calls.Add(1)%3 == 0 { // every third attempt fails: the worker retries it
			panic(http.ErrAbortHandler)
		}
	})
	hooks := []string{mustCreate(t, d, rc, "x").ID, mustCreate(t, d, rc, "x").ID}
	dispatchAll := func(prefix string, n int) {
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				for i := w; i < n; i += 16 {
					_, err := d.Dispatch(ctx, Event{Type: "x", ID: fmt.Sprintf("%s-%d", prefix, i)})
					assert.NoError(t, err)
				}
			})
		}
		wg.Wait()
	}
	d.CloseIdleConnections()
	before := libraryGoroutines()

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	dispatchAll("load", sized(150, 300)) // 300 or 600 deliveries
	jumped := false
	eventually(t, 10*time.Second, func() bool {
		n, err := d.ProcessDue(ctx)
		if err != nil || n != 0 {
			return false
		}
		if !jumped { // no queue holds a delivery: none is leased, nothing left to retry
			if !queuesEmpty(t, tr, d, hooks) {
				return false
			}
			clock.Advance(d.lease + time.Millisecond)
			jumped = true
		}
		for s := range shardCount {
			if tr.rdb.ZCard(ctx, d.keys.Ready(s)).Val() != 0 {
				return false
			}
		}
		return true
	}, "retries drained")
	require.Positive(t, libraryGoroutines().httpConns, "the load ran over kept-alive connections")
	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	d.CloseIdleConnections()
	after := libraryGoroutines()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); after = libraryGoroutines() {
		if len(after.ours) == 0 && after.httpConns <= before.httpConns {
			break
		}
		time.Sleep(20 * time.Millisecond) // connection goroutines see the close
	}
	assert.Empty(t, after.ours, "goroutines running the package's code")
	assert.LessOrEqual(t, after.httpConns, before.httpConns, "HTTP client connection goroutines")
}

// goroutineCensus counts the goroutines a dispatcher could leave behind.
type goroutineCensus struct {
	ours      []string // stacks with a frame of the package's non-test code, or created by one
	httpConns int      // HTTP client connection goroutines (net/http.(*persistConn))
}

// libraryGoroutines takes a goroutineCensus of the running process.
func libraryGoroutines() goroutineCensus {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var c goroutineCensus
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "net/http.(*persistConn).") {
			c.httpConns++
		}
		lines := strings.Split(g, "\n")
		for i := 0; i+1 < len(lines); i++ { // a function line, then a tab and its file:line
			fn := strings.TrimPrefix(lines[i], "created by ")
			file, _, _ := strings.Cut(strings.TrimSpace(lines[i+1]), ":")
			if strings.HasPrefix(fn, "github.com/smartdrop/webhooks.") && !strings.HasSuffix(file, "_test.go") {
				c.ours = append(c.ours, g)
				break
			}
		}
	}
	return c
}
