package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/verify"
)

// TestTransformReshapesTheBody: a webhook's transformation becomes the data it receives, the body
// keeps its id, type and timestamp, and the signature covers the body sent.
func TestTransformReshapesTheBody(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	w, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"invoice.*"},
		Transform: `{"text": "Invoice " + event.data.id + " paid: " + string(event.data.amount) + " cents"}`})
	require.NoError(t, err)
	res, err := d.Dispatch(ctx, Event{Type: "invoice.paid", ID: "in_1", Data: map[string]any{"id": "in_1", "amount": 4200}})
	require.NoError(t, err)
	require.Equal(t, StatusSuccess, res[0].Delivery.Status, res[0].Delivery.LastError)
	reqs := rc.requests()
	require.Len(t, reqs, 1)
	v, err := verify.New(w.Secret)
	require.NoError(t, err)
	require.NoError(t, v.Verify(reqs[0].Header, reqs[0].Body), "the signature covers the transformed body")
	var body map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(reqs[0].Body, &body))
	assert.JSONEq(t, `{"text":"Invoice in_1 paid: 4200 cents"}`, string(body["data"]))
	assert.JSONEq(t, `"in_1"`, string(body["id"]))
	assert.JSONEq(t, `"invoice.paid"`, string(body["type"]))
	assert.Contains(t, body, "timestamp")

	payload := call(d.Handler(), "GET", "/deliveries/"+res[0].Delivery.ID+"/payload", "")
	require.Equal(t, 200, payload.Code, payload.Body.String())
	assert.Contains(t, payload.Body.String(), "Invoice in_1 paid", "the delivery page shows the body sent")
	assert.Contains(t, payload.Body.String(), `"transformed":true`, "the answer says the body is the transformation's")
}

// TestTransformNullSkips: a transformation that gives null skips the event for its webhook: nothing is
// sent, the delivery is recorded as skipped, not attempted, and the breaker counts nothing; the
// webhook's hourly stats count each skip (Dispatch's and the worker's) apart from its attempts.
func TestTransformNullSkips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{BreakAfter: 1})
	rc := newReceiver(t)
	w, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"},
		Transform: `event.data.amount >= 1000 ? event.data : null`})
	require.NoError(t, err)
	for _, tc := range []struct {
		amount int
		status Status
	}{{5, StatusSkipped}, {5000, StatusSuccess}, {7, StatusSkipped}} {
		id := fmt.Sprint("e", tc.amount)
		res, err := d.Dispatch(ctx, Event{Type: "x", ID: id, Data: map[string]int{"amount": tc.amount}})
		require.NoError(t, err)
		dl, err := d.Deliveries().Get(ctx, res[0].Delivery.ID)
		require.NoError(t, err)
		assert.Equal(t, tc.status, dl.Status, id)
		if tc.status == StatusSkipped {
			assert.Zero(t, dl.Attempts, "never attempted")
			assert.Contains(t, dl.LastError, "skipped")
		}
	}
	assert.Equal(t, 1, rc.count(), "only the event the transformation kept was sent")
	h, err := d.Webhooks().Health(ctx, w.ID)
	require.NoError(t, err)
	assert.Equal(t, CircuitClosed, h.State)
	page, err := d.Deliveries().Page(ctx, w.ID, DeliveryQuery{Status: StatusSkipped})
	require.NoError(t, err)
	assert.Len(t, page.Deliveries, 2, "skipped deliveries are listed as such")

	// The worker skips too; every skip is counted in the webhook's stats, apart from its attempts.
	_, err = d.Enqueue(ctx, Event{Type: "x", ID: "e9", Data: map[string]int{"amount": 9}})
	require.NoError(t, err)
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	var stats struct {
		Hours []HourStats `json:"hours"`
	}
	newAPI(t, d).do("GET", "/webhooks/"+w.ID+"/stats", "").ok(t, 200, &stats)
	var total HourStats
	for _, h := range stats.Hours {
		total.Success, total.Failed, total.Skipped = total.Success+h.Success, total.Failed+h.Failed, total.Skipped+h.Skipped
	}
	assert.Equal(t, HourStats{Success: 1, Skipped: 3}, total, "GET /webhooks/{id}/stats: 1 sent, 3 skipped, none failed")
}

// TestTransformRefusedAtSave: an expression that does not compile is refused at Create and Update
// with its line and column; one whose estimated cost is over the bound too.
func TestTransformRefusedAtSave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	for _, tc := range []struct{ expr, want string }{
		{`{"n": 1 + "a"}`, "at 1:9"},
		{`{"n": event.data.x +}`, "at 1:21"},
		{`"text"`, "must give a map"},
		{`event.data.l.map(a, event.data.l.map(b, event.data.l.map(c, a + b + c)))`, "MaxTransformCost"},
	} {
		_, err := d.Webhooks().Create(ctx, Webhook{URL: "https://example.com/h", Events: []string{"*"}, Transform: tc.expr})
		require.ErrorIs(t, err, ErrInvalidWebhook, tc.expr)
		assert.Contains(t, err.Error(), tc.want, tc.expr)
		var fe interface{ Field() string }
		if assert.ErrorAs(t, err, &fe, tc.expr) {
			assert.Equal(t, "transform", fe.Field())
		}
	}
	w, err := d.Webhooks().Create(ctx, Webhook{URL: "https://example.com/h", Events: []string{"*"}})
	require.NoError(t, err)
	w.Transform = `{"n": event.data.x +}`
	_, err = d.Webhooks().Update(ctx, *w)
	require.ErrorIs(t, err, ErrInvalidWebhook)
}

// TestTransformCostBoundFailsTheDelivery: an expression whose work on an event reaches
// MaxTransformCost fails that delivery in words, without a retry and without a request, and the next
// event still flows.
func TestTransformCostBoundFailsTheDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{MaxTransformCost: 10_000, RetrySchedule: []time.Duration{time.Minute}})
	rc := newReceiver(t)
	_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"},
		Transform: `{"n": event.data.l.map(x, x * 2).size()}`})
	require.NoError(t, err)
	big := make([]int, 20_000)
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "big", Data: map[string]any{"l": big}})
	require.NoError(t, err)
	assert.Equal(t, StatusFailed, res[0].Delivery.Status, "no retry loop")
	assert.Contains(t, res[0].Delivery.LastError, "cost bound")
	assert.Zero(t, rc.count(), "nothing was sent")
	stored, err := d.Deliveries().Get(ctx, res[0].Delivery.ID)
	require.NoError(t, err)
	assert.Zero(t, stored.Attempts, "no attempt recorded: the delivery page shows no request that was never sent")
	assert.Empty(t, stored.History)
	assert.Equal(t, StatusFailed, stored.Status)
	res, err = d.Dispatch(ctx, Event{Type: "x", ID: "small", Data: map[string]any{"l": []int{1, 2}}})
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, res[0].Delivery.Status, res[0].Delivery.LastError)
	assert.Equal(t, 1, rc.count())
}

// TestTransformOnePerPairUnderConcurrency: 16 goroutines over 3 Dispatchers dispatch every event twice
// (80 events; 200 with WEBHOOKS_LONG_TESTS) through a transformed webhook: the receiver gets each event
// once, transformed.
func TestTransformOnePerPairUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	ds := []*Dispatcher{newTestDispatcher(t, tr, Options{}), newTestDispatcher(t, tr, Options{}), newTestDispatcher(t, tr, Options{})}
	rc := newReceiver(t)
	_, err := ds[0].Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Transform: `{"n": event.data.n * 10}`})
	require.NoError(t, err)
	events := sized(80, 200)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := g; i < 2*events; i += 16 {
				n := i % events
				_, err := ds[i%3].Dispatch(ctx, Event{Type: "x", ID: fmt.Sprint("e", n), Data: map[string]int{"n": n}})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	for _, d := range ds {
		for range 10 { // what an inline attempt left to the worker
			_, err := d.ProcessDue(ctx)
			require.NoError(t, err)
		}
	}
	got := map[string]int{}
	for _, r := range rc.requests() {
		var b struct {
			ID   string
			Data struct{ N int }
		}
		require.NoError(t, json.Unmarshal(r.Body, &b))
		got[b.ID]++
		assert.Equal(t, 10*mustAtoi(t, strings.TrimPrefix(b.ID, "e")), b.Data.N, b.ID)
	}
	assert.Len(t, got, events)
	for id, n := range got {
		assert.Equal(t, 1, n, id)
	}
}

func mustAtoi(t *testing.T, s string) int {
	var n int
	_, err := fmt.Sscan(s, &n)
	require.NoError(t, err)
	return n
}

// TestPreviewTransform: PreviewTransform runs an expression on a sample event: the data it would send,
// null when it skips, or the error in words.
func TestPreviewTransform(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newTestDispatcher(t, newTestRedis(t), Options{})
	evt := Event{Type: "invoice.paid", ID: "in_1", Tenant: "acme", Data: map[string]int{"amount": 4200}}
	out, err := d.PreviewTransform(ctx, `{"cents": event.data.amount, "who": event.tenant}`, evt)
	require.NoError(t, err)
	assert.JSONEq(t, `{"cents":4200,"who":"acme"}`, string(out))
	out, err = d.PreviewTransform(ctx, `null`, evt)
	require.NoError(t, err)
	assert.Equal(t, "null", string(out))
	_, err = d.PreviewTransform(ctx, `{"x": event.data.nope}`, evt)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no such key")
	_, err = d.PreviewTransform(ctx, `{"x": `, evt)
	require.ErrorIs(t, err, ErrInvalidWebhook)
}

// TestTransformRoutes: POST /transform/preview runs an expression on a sample event or a catalog
// type's example; a tenant's portal previews on its own tenant's events, and sets the transformation
// of its own webhooks only.
func TestTransformRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	_, err := d.EventTypes().Create(ctx, EventType{Name: "invoice.paid", Examples: []json.RawMessage{json.RawMessage(`{"amount": 4200}`)}})
	require.NoError(t, err)
	ours, err := d.Webhooks().Create(ctx, Webhook{URL: "https://example.com/a", Tenant: "acme", Events: []string{"*"}})
	require.NoError(t, err)
	theirs, err := d.Webhooks().Create(ctx, Webhook{URL: "https://example.com/b", Tenant: "other", Events: []string{"*"}})
	require.NoError(t, err)
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)

	for _, tc := range []struct {
		name, body string
		portal     bool
		status     int
		want       string
	}{
		{"event", `{"transform":"{\"c\": event.data.amount, \"t\": event.tenant}","event":{"type":"invoice.paid","tenant":"x","data":{"amount":5}}}`, false, 200, `{"data":{"c":5,"t":"x"},"skipped":false}`},
		{"catalog example", `{"transform":"{\"c\": event.data.amount}","event_type":"invoice.paid"}`, false, 200, `{"data":{"c":4200},"skipped":false}`},
		{"skip", `{"transform":"null","event_type":"invoice.paid"}`, false, 200, `{"data":null,"skipped":true}`},
		{"compile error", `{"transform":"{\"c\": 1 + \"a\"}","event_type":"invoice.paid"}`, false, 400, `at 1:9`},
		{"runtime error", `{"transform":"{\"c\": event.data.nope}","event_type":"invoice.paid"}`, false, 400, `no such key`},
		{"portal: its own tenant", `{"transform":"{\"t\": event.tenant}","event":{"type":"x","tenant":"other","data":{}}}`, true, 200, `{"data":{"t":"acme"},"skipped":false}`},
	} {
		h, tok := d.Handler(), ""
		if tc.portal {
			h, tok = d.Portal(), token
		}
		rec := callWith(h, "POST", "/transform/preview", tok, tc.body)
		assert.Equal(t, tc.status, rec.Code, "%s: %s", tc.name, rec.Body.String())
		if tc.status == 200 {
			assert.JSONEq(t, tc.want, rec.Body.String(), tc.name)
		} else {
			assert.Contains(t, rec.Body.String(), tc.want, tc.name)
		}
	}

	rec := callWith(d.Portal(), "PATCH", "/webhooks/"+ours.ID, token, `{"transform":"{\"x\": 1}"}`)
	require.Equal(t, 200, rec.Code, rec.Body.String())
	got, err := d.Webhooks().Get(ctx, ours.ID)
	require.NoError(t, err)
	assert.Equal(t, `{"x": 1}`, got.Transform)
	rec = callWith(d.Portal(), "PATCH", "/webhooks/"+theirs.ID, token, `{"transform":"{\"x\": 1}"}`)
	assert.Equal(t, 404, rec.Code, "another tenant's webhook: %s", rec.Body.String())
	got, err = d.Webhooks().Get(ctx, theirs.ID)
	require.NoError(t, err)
	assert.Empty(t, got.Transform)
}
