package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

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
	window := dlv.UpdatedAt.Truncate(OperationalWindow).UTC()
	assert.Equal(t, "delivery.failed:"+failing.ID+":w"+itoa(window.UnixMilli()), e.ID, "one event per webhook per window")
	assert.Equal(t, OperationalData{WebhookID: failing.ID, URL: bad.srv.URL + "/hook", DeliveryID: dlv.ID, EventID: "e1",
		EventType: "x", Attempts: 1, LastStatusCode: 500, LastError: "HTTP 500", WindowStart: window}, e.Data)
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
	// Retries to spare: on a loaded machine the worker may probe (and fail) again before the
	// receiver recovers, and the closing probe needs a retry left.
	retries := make([]time.Duration, 10)
	for i := range retries {
		retries[i] = 20 * time.Millisecond
	}
	d := newOpsDispatcher(t, tr, Options{BreakAfter: 1, BreakFor: 50 * time.Millisecond, RetrySchedule: retries})
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
	// The run began when the failure's answer came; the circuit opened when it was counted, just after,
	// for BreakFor (drain may have made the probe since).
	got := opened[0].Data
	assert.WithinRange(t, got.OpenUntil, h.FailingSince.Add(50*time.Millisecond), h.FailingSince.Add(50*time.Millisecond+time.Second),
		"open for BreakFor from when the run's first failure was counted")
	got.OpenUntil = time.Time{}
	assert.Equal(t, OperationalData{WebhookID: flaky.ID, URL: bad.srv.URL, State: CircuitOpen, Failures: 1,
		FailingSince: h.FailingSince.UTC()}, got, "opened by the run's first failure")

	eventually(t, 5*time.Second, func() bool {
		_, err := d.ProcessDue(ctx) // the parked retry is the probe, once the open period ends; it fails
		require.NoError(t, err)
		h, err := d.Webhooks().Health(ctx, flaky.ID)
		require.NoError(t, err)
		return h.OpenFor >= 100*time.Millisecond // twice BreakFor, or more when a loaded machine's drain probed first
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
		EventID: "e2", EventType: "y", Attempts: 1, LastStatusCode: 500, LastError: "HTTP 500", WindowStart: toOp[1].Data.WindowStart}, toOp[1].Data)
	assert.Len(t, opEvents(t, acme, acmeWh), 1, "an operator webhook's events are not a tenant's")
	assert.Empty(t, opEvents(t, globex, globexWh))
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

// TestOperationalDeliveryFailedIsCoalesced: 20 deliveries of one webhook failing for good within a
// window send one delivery.failed (issue 43: they sent 20 in 3 s); the next window's event says how
// many more failed in the window before.
func TestOperationalDeliveryFailedIsCoalesced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newOpsDispatcher(t, tr, Options{})
	clock := newTestClock()
	d.now = clock.Now
	bad := failingReceiver(t, http.StatusBadRequest)
	failing := hookOn(t, d, bad.srv.URL, "", "x")
	op := newReceiver(t)
	opWh := hookOn(t, d, op.srv.URL, "", "delivery.failed")

	const failed = 20
	for i := range failed {
		res, err := d.Dispatch(ctx, Event{Type: "x", ID: fmt.Sprintf("e%d", i)})
		require.NoError(t, err)
		require.Equal(t, StatusFailed, res[0].Delivery.Status)
	}
	drain(t, d)
	evs := opEventsAt(t, clock.Now, op, opWh)
	require.Len(t, evs, 1, "one delivery.failed per webhook per window, not %d", failed)
	assert.Equal(t, failing.ID, evs[0].Data.WebhookID)
	assert.Equal(t, "e0", evs[0].Data.EventID, "the window's first failure's")
	assert.Zero(t, evs[0].Data.MoreFailed, "no window before it")

	clock.Advance(OperationalWindow)
	_, err := d.Dispatch(ctx, Event{Type: "x", ID: "next"})
	require.NoError(t, err)
	drain(t, d)
	evs = opEventsAt(t, clock.Now, op, opWh)
	require.Len(t, evs, 2, "the next window's first failure sends one")
	assert.Equal(t, "next", evs[1].Data.EventID)
	assert.Equal(t, failed-1, evs[1].Data.MoreFailed, "it counts the window before's failures that sent nothing")
	assert.Equal(t, failed+1, bad.count(), "every delivery was attempted")
}
