package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// opEvent is one operational request a receiver got, decoded, its signature checked.
type opEvent struct {
	DeliveryID string
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Data       OperationalData `json:"data"`
}

// opEvents decodes the requests rc received for webhook w, of the given types (all when none), and
// requires each to verify with w's secret.
func opEvents(t *testing.T, rc *receiver, w *Webhook, types ...string) []opEvent {
	t.Helper()
	return opEventsAt(t, time.Now, rc, w, types...)
}

// opEventsAt is opEvents for a dispatcher on a test clock: requests are signed at its time.
func opEventsAt(t *testing.T, now func() time.Time, rc *receiver, w *Webhook, types ...string) []opEvent {
	t.Helper()
	var out []opEvent
	for _, r := range rc.requests() {
		var e opEvent
		require.NoError(t, json.Unmarshal(r.Body, &e))
		e.DeliveryID = r.Header.Get("webhook-id")
		if len(types) > 0 && !contains(types, e.Type) {
			continue
		}
		require.NoError(t, verifyAt(w.Secret, r.Header, r.Body, now()), "an operational request verifies with its webhook's secret")
		out = append(out, e)
	}
	return out
}

// newOpsDispatcher is newTestDispatcher with operational events on and, unless set, no retries.
func newOpsDispatcher(t *testing.T, tr *testRedis, opts Options) *Dispatcher {
	t.Helper()
	opts.OperationalEvents = true
	if opts.RetrySchedule == nil {
		opts.RetrySchedule = []time.Duration{}
	}
	return newTestDispatcher(t, tr, opts)
}

// hookOn registers a webhook of tenant on url.
func hookOn(t *testing.T, d *Dispatcher, url, tenant string, events ...string) *Webhook {
	t.Helper()
	w, err := d.Webhooks().Create(context.Background(), Webhook{URL: url, Tenant: tenant, Events: events})
	require.NoError(t, err)
	return w
}

// failingReceiver is a receiver that answers status.
func failingReceiver(t *testing.T, status int) *receiver {
	rc := newReceiver(t)
	rc.status.Store(int32(status))
	return rc
}

// drain runs worker passes until one finds nothing due; a bounded number, so an endless chain of
// operational deliveries fails the test.
func drain(t *testing.T, d *Dispatcher) {
	t.Helper()
	for range 12 {
		n, err := d.ProcessDue(context.Background())
		require.NoError(t, err)
		if n == 0 {
			return
		}
	}
	t.Fatal("deliveries still due after 12 worker passes: operational events feed each other")
}

func TestOperationalDeliveryFailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newOpsDispatcher(t, tr, Options{})
	bad := failingReceiver(t, http.StatusInternalServerError)
	failing := hookOn(t, d, bad.srv.URL+"/hook?token=s3cret", "", "x", "delivery.failed")
	op, everything := newReceiver(t), newReceiver(t)
	opWh := hookOn(t, d, op.srv.URL, "", "delivery.*")
	hookOn(t, d, everything.srv.URL, "", "*")

	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "e1"})
	require.NoError(t, err)
	require.Len(t, res, 2) // failing and everything
	var dlv *Delivery
	for _, r := range res {
		if r.WebhookID == failing.ID {
			dlv = r.Delivery
		}
	}
	require.NotNil(t, dlv)
	require.Equal(t, StatusFailed, dlv.Status)
	drain(t, d)

	evs := opEvents(t, op, opWh)
	require.Len(t, evs, 1, "one delivery.failed to the operator")
	e := evs[0]
	assert.Equal(t, EventDeliveryFailed, e.Type)
	assert.Equal(t, "delivery.failed:"+failing.ID+":"+dlv.ID+":"+itoa(dlv.UpdatedAt.UnixMilli()), e.ID)
	assert.Equal(t, OperationalData{WebhookID: failing.ID, URL: bad.srv.URL + "/hook", DeliveryID: dlv.ID, EventID: "e1",
		EventType: "x", Attempts: 1, LastStatusCode: 500, LastError: "HTTP 500"}, e.Data)
	got, err := d.Deliveries().Get(ctx, e.DeliveryID)
	require.NoError(t, err, "the operational event is an ordinary delivery")
	assert.Equal(t, StatusSuccess, got.Status)
	assert.Equal(t, opWh.ID, got.WebhookID)
	assert.Equal(t, 1, bad.count(), "the failing webhook gets nothing about its own delivery")
	assert.Equal(t, 1, everything.count(), "* alone does not select operational events")
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestOperationalCircuitOpenedAndClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newOpsDispatcher(t, tr, Options{BreakAfter: 1, BreakFor: 50 * time.Millisecond,
		RetrySchedule: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond}})
	bad := failingReceiver(t, http.StatusServiceUnavailable)
	flaky := hookOn(t, d, bad.srv.URL, "", "x")
	op := newReceiver(t)
	opWh := hookOn(t, d, op.srv.URL, "", "circuit.*")

	_, err := d.Dispatch(ctx, Event{Type: "x", ID: "e1"})
	require.NoError(t, err)
	drain(t, d)
	opened := opEvents(t, op, opWh, EventCircuitOpened)
	require.Len(t, opened, 1)
	h, err := d.Webhooks().Health(ctx, flaky.ID)
	require.NoError(t, err)
	assert.Equal(t, "circuit.opened:"+flaky.ID+":"+itoa(h.FailingSince.UnixMilli()), opened[0].ID)
	assert.Equal(t, OperationalData{WebhookID: flaky.ID, URL: bad.srv.URL, State: CircuitOpen, Failures: 1,
		FailingSince: h.FailingSince.UTC(), OpenUntil: h.OpenUntil.UTC()}, opened[0].Data)

	eventually(t, 5*time.Second, func() bool {
		_, err := d.ProcessDue(ctx) // the parked retry is the probe, once the open period ends; it fails
		require.NoError(t, err)
		h, err := d.Webhooks().Health(ctx, flaky.ID)
		require.NoError(t, err)
		return h.OpenFor == 100*time.Millisecond
	}, "a failed probe reopens the circuit")
	drain(t, d)
	assert.Len(t, opEvents(t, op, opWh, EventCircuitOpened), 1, "once per run of failures: a reopening sends nothing")

	bad.status.Store(http.StatusOK)
	eventually(t, 5*time.Second, func() bool {
		_, err := d.ProcessDue(ctx) // the parked retry is the probe, once the open period ends
		require.NoError(t, err)
		return len(opEvents(t, op, opWh, EventCircuitClosed)) > 0
	}, "circuit.closed")
	drain(t, d)
	closed := opEvents(t, op, opWh, EventCircuitClosed)
	require.Len(t, closed, 1)
	assert.Equal(t, OperationalData{WebhookID: flaky.ID, URL: bad.srv.URL, State: CircuitClosed}, closed[0].Data)
	assert.Len(t, opEvents(t, op, opWh), 2, "one opened, one closed")
}

func TestOperationalWebhookFailingThenDisabled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{OperationalEvents: true, RetrySchedule: []time.Duration{},
		DisableAfter: time.Hour})
	bad := failingReceiver(t, http.StatusInternalServerError)
	failing := hookOn(t, d, bad.srv.URL, "", "x")
	op := newReceiver(t)
	opWh := hookOn(t, d, op.srv.URL, "", "webhook.*")

	dispatch := func(id string) {
		_, err := d.Dispatch(ctx, Event{Type: "x", ID: id})
		require.NoError(t, err)
		drain(t, d)
	}
	since := clock.Now()
	dispatch("e1")
	clock.Advance(29 * time.Minute)
	dispatch("e2")
	require.Empty(t, opEventsAt(t, clock.Now, op, opWh), "before half of DisableAfter: no warning")
	clock.Advance(2 * time.Minute)
	dispatch("e3")
	dispatch("e4")
	failingEvs := opEventsAt(t, clock.Now, op, opWh, EventWebhookFailing)
	require.Len(t, failingEvs, 1, "once per run of failures")
	runStart := time.UnixMilli(since.UnixMilli()).UTC()
	assert.Equal(t, "webhook.failing:"+failing.ID+":"+itoa(since.UnixMilli()), failingEvs[0].ID)
	assert.Equal(t, OperationalData{WebhookID: failing.ID, URL: bad.srv.URL, State: CircuitClosed, Failures: 3,
		FailingSince: runStart, DisableAt: runStart.Add(time.Hour)}, failingEvs[0].Data)

	clock.Advance(30 * time.Minute)
	dispatch("e5")
	disabled := opEventsAt(t, clock.Now, op, opWh, EventWebhookDisabled)
	require.Len(t, disabled, 1)
	assert.Equal(t, OperationalData{WebhookID: failing.ID, URL: bad.srv.URL, Reason: "every attempt failed for 1h0m0s",
		FailingSince: runStart}, disabled[0].Data)
	assert.Equal(t, 2, op.count(), "one webhook.failing, one webhook.disabled")
}

func TestOperationalWebhookDisabledByGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newOpsDispatcher(t, tr, Options{})
	gone := failingReceiver(t, http.StatusGone)
	w := hookOn(t, d, gone.srv.URL, "", "x")
	op := newReceiver(t)
	opWh := hookOn(t, d, op.srv.URL, "", "webhook.disabled")

	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "e1"})
	require.NoError(t, err)
	drain(t, d)
	evs := opEvents(t, op, opWh)
	require.Len(t, evs, 1, "webhook.disabled only: the operator did not subscribe to delivery.failed")
	assert.Equal(t, EventWebhookDisabled, evs[0].Type)
	assert.Equal(t, "webhook.disabled:"+w.ID+":"+res[0].Delivery.ID+":"+itoa(res[0].Delivery.UpdatedAt.UnixMilli()), evs[0].ID)
	assert.Equal(t, OperationalData{WebhookID: w.ID, URL: gone.srv.URL, Reason: "the endpoint answered 410 Gone"}, evs[0].Data)
}

// TestOperationalTenantScope: an event about a tenant's webhook goes to that tenant's subscribers and
// to the operator's, never to another tenant's; one about an operator's webhook to the operator's only.
func TestOperationalTenantScope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newOpsDispatcher(t, tr, Options{})
	acme, globex, op := newReceiver(t), newReceiver(t), newReceiver(t)
	acmeWh := hookOn(t, d, acme.srv.URL, "acme", "delivery.failed")
	globexWh := hookOn(t, d, globex.srv.URL, "globex", "delivery.failed")
	opWh := hookOn(t, d, op.srv.URL, "", "delivery.failed")
	bad := failingReceiver(t, http.StatusInternalServerError)
	acmeFailing := hookOn(t, d, bad.srv.URL, "acme", "x")
	opFailing := hookOn(t, d, bad.srv.URL, "", "y")

	_, err := d.Dispatch(ctx, Event{Type: "x", ID: "e1", Tenant: "acme"})
	require.NoError(t, err)
	drain(t, d)
	toAcme, toOp := opEvents(t, acme, acmeWh), opEvents(t, op, opWh)
	require.Len(t, toAcme, 1)
	require.Len(t, toOp, 1)
	for _, e := range []opEvent{toAcme[0], toOp[0]} {
		assert.Equal(t, acmeFailing.ID, e.Data.WebhookID)
		assert.Equal(t, "acme", e.Data.Tenant)
	}
	assert.NotEqual(t, toAcme[0].DeliveryID, toOp[0].DeliveryID, "two deliveries: one per scope")
	assert.Empty(t, opEvents(t, globex, globexWh), "never about another tenant")

	_, err = d.Dispatch(ctx, Event{Type: "y", ID: "e2"})
	require.NoError(t, err)
	drain(t, d)
	toOp = opEvents(t, op, opWh)
	require.Len(t, toOp, 2)
	assert.Equal(t, OperationalData{WebhookID: opFailing.ID, URL: bad.srv.URL, DeliveryID: toOp[1].Data.DeliveryID,
		EventID: "e2", EventType: "y", Attempts: 1, LastStatusCode: 500, LastError: "HTTP 500"}, toOp[1].Data)
	assert.Len(t, opEvents(t, acme, acmeWh), 1, "an operator webhook's events are not a tenant's")
	assert.Empty(t, opEvents(t, globex, globexWh))
}

// TestOperationalLoopGuard: two failing webhooks subscribed to delivery.failed each hear of the
// other's failed delivery once, never of their own, and their failing operational deliveries tell no
// one (drain fails if they fed each other).
func TestOperationalLoopGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newOpsDispatcher(t, tr, Options{})
	prc, qrc := failingReceiver(t, http.StatusInternalServerError), failingReceiver(t, http.StatusInternalServerError)
	p := hookOn(t, d, prc.srv.URL, "", "x", "delivery.failed")
	q := hookOn(t, d, qrc.srv.URL, "", "x", "delivery.*")

	_, err := d.Dispatch(ctx, Event{Type: "x", ID: "e1"})
	require.NoError(t, err)
	drain(t, d)
	for _, c := range []struct {
		rc    *receiver
		wh    *Webhook
		other string
	}{{prc, p, q.ID}, {qrc, q, p.ID}} {
		evs := opEvents(t, c.rc, c.wh, EventDeliveryFailed)
		require.Len(t, evs, 1, "webhook %s: one delivery.failed, about the other's delivery of e1", c.wh.ID)
		assert.Equal(t, c.other, evs[0].Data.WebhookID)
		assert.Equal(t, "x", evs[0].Data.EventType)
		assert.Equal(t, 2, c.rc.count(), "e1 and one operational event")
	}
}

// TestOperationalDedupAcrossReplicas: three Dispatchers on their own clients each notice that the same
// webhook's run of failures passed half of DisableAfter, and each claims webhook.failing: the operator
// gets one.
func TestOperationalDedupAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	clock := newTestClock()
	var ds []*Dispatcher
	for range 3 {
		d := newTestDispatcherOn(t, tr.newClient(t), tr, Options{OperationalEvents: true, RetrySchedule: []time.Duration{},
			DisableAfter: time.Hour})
		d.now = clock.Now
		ds = append(ds, d)
	}
	bad := failingReceiver(t, http.StatusInternalServerError)
	failing := hookOn(t, ds[0], bad.srv.URL, "", "x")
	op := newReceiver(t)
	opWh := hookOn(t, ds[0], op.srv.URL, "", "webhook.failing")
	since := clock.Now()
	_, err := ds[0].Dispatch(ctx, Event{Type: "x", ID: "e0"})
	require.NoError(t, err)
	clock.Advance(40 * time.Minute)

	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() {
			for j := range 2 {
				_, err := d.Dispatch(ctx, Event{Type: "x", ID: "e" + itoa(int64(10*i+j+1))})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	for i, d := range ds {
		d.failing.mu.Lock()
		assert.Equal(t, since.UnixMilli(), d.failing.warned[failing.ID], "replica %d noticed the run and claimed the event", i)
		d.failing.mu.Unlock()
	}
	drain(t, ds[1])
	evs := opEventsAt(t, clock.Now, op, opWh)
	require.Len(t, evs, 1, "one event, whichever replicas noticed")
	assert.Equal(t, 7, bad.count())
}

// TestOperationalCircuitOpenedOnceAcrossReplicas: replicas failing the same webhook concurrently open
// its circuit once, and the operator hears of it once.
func TestOperationalCircuitOpenedOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	var ds []*Dispatcher
	for range 3 {
		ds = append(ds, newTestDispatcherOn(t, tr.newClient(t), tr, Options{OperationalEvents: true,
			RetrySchedule: []time.Duration{time.Hour}, BreakAfter: 3, BreakFor: time.Minute}))
	}
	bad := failingReceiver(t, http.StatusInternalServerError)
	hookOn(t, ds[0], bad.srv.URL, "", "x")
	op := newReceiver(t)
	opWh := hookOn(t, ds[0], op.srv.URL, "", "circuit.opened")
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() {
			for j := range 3 {
				_, err := d.Dispatch(ctx, Event{Type: "x", ID: "e" + itoa(int64(10*i+j))})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	drain(t, ds[2])
	assert.Len(t, opEvents(t, op, opWh), 1)
}

func TestDispatchRefusesOperationalTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	on, off := newOpsDispatcher(t, tr, Options{}), newTestDispatcher(t, tr, Options{})
	for _, typ := range operationalTypes {
		for _, call := range []func(context.Context, Event) ([]Result, error){on.Dispatch, on.Enqueue} {
			_, err := call(ctx, Event{Type: typ, ID: "forged"})
			assert.ErrorIs(t, err, ErrInvalidEvent, typ)
		}
		_, err := off.Dispatch(ctx, Event{Type: typ, ID: "own"})
		assert.NoError(t, err, "with operational events off, %s is an ordinary type", typ)
	}
}

// TestOperationalCostsNothingUnused: with operational events on and no webhook subscribed to them,
// a Dispatch makes as many round trips as with them off, for a healthy webhook and a failing one.
func TestOperationalCostsNothingUnused(t *testing.T) {
	ctx := context.Background()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	rt := &roundTrips{}
	c.AddHook(rt)
	on := newTestDispatcherOn(t, c, tr, Options{OperationalEvents: true, RetrySchedule: []time.Duration{}})
	off := newTestDispatcherOn(t, c, tr, Options{RetrySchedule: []time.Duration{}})
	hookOn(t, on, newReceiver(t).srv.URL, "", "ok")
	hookOn(t, on, failingReceiver(t, http.StatusInternalServerError).srv.URL, "", "bad")
	hookOn(t, on, newReceiver(t).srv.URL, "", "other.*") // subscribed, but to no operational type
	ids := eventIDsInShard(t, "cost", 0, 12)
	trips := func(d *Dispatcher, typ string, warm, id string) int32 {
		_, err := d.Dispatch(ctx, Event{Type: typ, ID: warm}) // caches, connections
		require.NoError(t, err)
		rt.n.Store(0)
		_, err = d.Dispatch(ctx, Event{Type: typ, ID: id})
		require.NoError(t, err)
		return rt.n.Load()
	}
	for i, typ := range []string{"ok", "bad"} {
		k := 6 * i
		offTrips := trips(off, typ, ids[k], ids[k+1])
		onTrips := trips(on, typ, ids[k+2], ids[k+3])
		assert.Equal(t, offTrips, onTrips, "%s: round trips with operational events on, unused", typ)
		assert.Equal(t, offTrips, trips(off, typ, ids[k+4], ids[k+5]), "%s: the count is stable", typ)
	}
}

// refuseOperationalClaims is a go-redis hook that fails every command carrying an operational event's
// body, as a Redis that refuses the claim would.
type refuseOperationalClaims struct{ passHook }

func carriesOperational(cmd redis.Cmder) bool {
	for _, a := range cmd.Args() {
		switch a := a.(type) {
		case string:
			if strings.Contains(a, `"type":"delivery.failed"`) {
				return true
			}
		case []byte:
			if bytes.Contains(a, []byte(`"type":"delivery.failed"`)) {
				return true
			}
		}
	}
	return false
}

func (refuseOperationalClaims) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if carriesOperational(cmd) {
			cmd.SetErr(errors.New("refused by the test"))
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

func (refuseOperationalClaims) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, carriesOperational) {
			for _, c := range cmds {
				c.SetErr(errors.New("refused by the test"))
			}
			return cmds[0].Err()
		}
		return next(ctx, cmds)
	}
}

// TestOperationalEnqueueFailureIsLogged: an operational event that cannot be claimed is logged, and
// the delivery it is about is recorded all the same.
func TestOperationalEnqueueFailureIsLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	c.AddHook(refuseOperationalClaims{})
	logs := &handlerLogBuffer{}
	d := newTestDispatcherOn(t, c, tr, Options{OperationalEvents: true, RetrySchedule: []time.Duration{},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	bad := failingReceiver(t, http.StatusInternalServerError)
	hookOn(t, d, bad.srv.URL, "", "x")
	op := newReceiver(t)
	hookOn(t, d, op.srv.URL, "", "delivery.failed")

	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "e1"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	assert.Equal(t, StatusFailed, res[0].Delivery.Status)
	got, err := d.Deliveries().Get(ctx, res[0].Delivery.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusFailed, got.Status, "the failed delivery is recorded")
	drain(t, d)
	assert.Zero(t, op.count())
	assert.Contains(t, logs.String(), "webhooks: operational event not enqueued")
	assert.Contains(t, logs.String(), "refused by the test")
}

// TestOperationalDeliveryIsRetried: an operational delivery the operator's endpoint fails is retried
// by the schedule, like any other, and its record shows both attempts.
func TestOperationalDeliveryIsRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newOpsDispatcher(t, tr, Options{RetrySchedule: []time.Duration{20 * time.Millisecond}})
	bad := failingReceiver(t, http.StatusInternalServerError)
	hookOn(t, d, bad.srv.URL, "", "x")
	op := newReceiver(t)
	var answered atomic.Int32
	op.setHook(func(*http.Request) { // the first request fails, the next succeed
		if answered.Add(1) == 1 {
			op.status.Store(http.StatusServiceUnavailable)
		} else {
			op.status.Store(http.StatusOK)
		}
	})
	opWh := hookOn(t, d, op.srv.URL, "", "delivery.failed")

	_, err := d.Dispatch(ctx, Event{Type: "x", ID: "e1"})
	require.NoError(t, err)
	eventually(t, 5*time.Second, func() bool {
		_, err := d.ProcessDue(ctx) // the failing webhook's retry, then the operational delivery and its retry
		require.NoError(t, err)
		return op.count() == 2
	}, "the operational delivery, failed once, then retried")
	evs := opEvents(t, op, opWh)
	require.Len(t, evs, 2)
	assert.Equal(t, evs[0].DeliveryID, evs[1].DeliveryID, "one delivery, two attempts")
	got, err := d.Deliveries().Get(ctx, evs[0].DeliveryID)
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, got.Status)
	assert.Equal(t, 2, got.Attempts)
	assert.Equal(t, 2, evs[0].Data.Attempts, "about the failing webhook's delivery: two attempts")
}
