package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// concurrencyReceiver answers every request after hold, and keeps the most requests it held at once.
type concurrencyReceiver struct {
	srv             *httptest.Server
	now, most, seen atomic.Int64
	delivered       sync.Map // webhook-id -> true
}

func newConcurrencyReceiver(t *testing.T, hold time.Duration) *concurrencyReceiver {
	rc := &concurrencyReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := rc.now.Add(1)
		for m := rc.most.Load(); n > m && !rc.most.CompareAndSwap(m, n); m = rc.most.Load() {
		}
		time.Sleep(hold)
		rc.seen.Add(1)
		rc.delivered.Store(r.Header.Get("webhook-id"), true)
		rc.now.Add(-1)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *concurrencyReceiver) deliveredN() int {
	n := 0
	rc.delivered.Range(func(any, any) bool { n++; return true })
	return n
}

// TestMaxConcurrencyIsAMaximum (DESIGN guarantee 5): a webhook with MaxConcurrency 4, sent events by 3
// Dispatchers (separate Redis clients, each running Run) from 32 goroutines each, inline (Dispatch)
// or through the worker (Enqueue): its receiver never holds more than 4 requests at once, and every
// event is delivered once. 120 events each way (240 with WEBHOOKS_LONG_TESTS): the 96 goroutines
// start at once, so from the first event 24 callers per slot contend for them.
func TestMaxConcurrencyIsAMaximum(t *testing.T) {
	t.Parallel()
	const limit, replicas, goroutines = 4, 3, 32
	events := sized(120, 240)
	for _, enqueue := range []bool{false, true} {
		t.Run(map[bool]string{false: "Dispatch", true: "Enqueue"}[enqueue], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			rc := newConcurrencyReceiver(t, 5*time.Millisecond)
			var ds []*Dispatcher
			for range replicas {
				ds = append(ds, newTestDispatcherOn(t, tr.newClient(t), tr, Options{Concurrency: 64}))
			}
			_, err := ds[0].Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, MaxConcurrency: limit})
			require.NoError(t, err)
			stop := runReplicas(t, ds)
			sendSpread(t, ds, replicas*goroutines, events, "c", enqueue, nil)
			waitProgress(events, rc.deliveredN, nil, 5*time.Millisecond)
			stop()
			t.Logf("requests %d, delivered %d of %d, most at once %d", rc.seen.Load(), rc.deliveredN(), events, rc.most.Load())
			assert.LessOrEqual(t, rc.most.Load(), int64(limit), "the receiver never held more than MaxConcurrency")
			assert.Equal(t, events, rc.deliveredN(), "every event delivered")
			assert.EqualValues(t, events, rc.seen.Load(), "each once")
			assert.Greater(t, rc.most.Load(), int64(1), "the load was concurrent")
		})
	}
}

// TestMaxConcurrencySlotOfACrashedHolderComesBack: a slot held by an attempt that never gives it back
// (its replica crashed) holds the webhook's only slot until its lease ends: a Dispatch meanwhile leaves
// its attempt to the worker (ErrDeferred, saying why), which delivers it once the lease has ended.
func TestMaxConcurrencySlotOfACrashedHolderComesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	rc := newConcurrencyReceiver(t, 0)
	d := newTestDispatcher(t, tr, Options{Timeout: 200 * time.Millisecond})
	_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, MaxConcurrency: 1})
	require.NoError(t, err)
	list, err := d.webhooks.List(ctx)
	require.NoError(t, err)
	crashed, ok := d.attempter.TakeConcurrencySlot(ctx, &storedWebhook{Webhook: *list[0]})
	require.True(t, ok)
	require.NotEmpty(t, crashed)
	taken := time.Now()

	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "e1"})
	require.NoError(t, err)
	require.ErrorIs(t, res[0].Err, ErrDeferred)
	assert.Contains(t, res[0].Err.Error(), "MaxConcurrency")
	assert.Zero(t, rc.seen.Load(), "no request while the slot is held")

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); assert.NoError(t, d.Run(runCtx)) }()
	deadline := time.Now().Add(10 * time.Second)
	for rc.deliveredN() < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	require.Equal(t, 1, rc.deliveredN(), "delivered once the crashed holder's lease ended")
	assert.GreaterOrEqual(t, time.Since(taken), d.lease-50*time.Millisecond, "not before that lease ended")
	assert.EqualValues(t, 1, rc.seen.Load())
	ttl := tr.rdb.PTTL(ctx, d.keys.Concurrency(list[0].ID)).Val()
	assert.True(t, ttl == -2*time.Nanosecond || ttl > 0, "the slots key expires (PTTL %s)", ttl)
}

// TestMaxConcurrencyThroughTheAPI: the operator API and the portal set and show MaxConcurrency, and a
// PATCH changes it.
func TestMaxConcurrencyThroughTheAPI(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	c := newAPI(t, d)
	rc := newReceiver(t)
	var w Webhook
	c.do("POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["*"],"max_concurrency":3}`, rc.srv.URL)).ok(t, http.StatusCreated, &w)
	assert.Equal(t, 3, w.MaxConcurrency)
	var off Webhook
	c.do("PATCH", "/webhooks/"+w.ID, `{"max_concurrency":0}`).ok(t, http.StatusOK, &off)
	assert.Zero(t, off.MaxConcurrency)
	c.do("PATCH", "/webhooks/"+w.ID, `{"max_concurrency":5}`).ok(t, http.StatusOK, &w)
	stored, err := d.Webhooks().Get(context.Background(), w.ID)
	require.NoError(t, err)
	assert.Equal(t, 5, stored.MaxConcurrency, "stored as the API set it")
}

// TestMaxConcurrencyCostsADuplicateNothing: a duplicate Dispatch to a webhook with MaxConcurrency
// makes no attempt, so it takes no slot: one round trip, as to any webhook.
func TestMaxConcurrencyCostsADuplicateNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	rt := &roundTrips{}
	c.AddHook(rt)
	d := newTestDispatcherOn(t, c, tr, Options{})
	d.now = newTestClock().Now // held still: the subscribers cached below stay fresh however slow the machine
	rc := newConcurrencyReceiver(t, 0)
	_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, MaxConcurrency: 2})
	require.NoError(t, err)
	evt := Event{Type: "x", ID: "dup"}
	res, err := d.Dispatch(ctx, evt)
	require.NoError(t, err)
	require.Equal(t, StatusSuccess, res[0].Delivery.Status)
	_, err = d.Dispatch(ctx, evt) // a duplicate: its script loaded on the event's node
	require.NoError(t, err)

	rt.n.Store(0)
	res, err = d.Dispatch(ctx, evt)
	require.NoError(t, err)
	require.True(t, res[0].Duplicate)
	assert.EqualValues(t, 1, rt.n.Load(), "a duplicate costs one round trip")
	assert.EqualValues(t, 1, rc.seen.Load(), "sent once")
}
