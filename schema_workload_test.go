package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// schemaWorkload touches every feature through the public API (tenants, filters, headers, ed25519
// keys, rate limits, the breaker opening and closing, Enqueue and Run on two replicas, redeliver,
// recover, a 410, stats, the admin API and the portal), scanning the prefix's keys after each step:
// keys that live only while deliveries are pending (queues, rate limiters) are caught while they exist.
type schemaWorkload struct {
	t   *testing.T
	ctx context.Context
	d   *Dispatcher
	kw  *keyWatch
	ok  *receiver // answers 200
	// webhooks the later steps change
	plain, asym *Webhook
}

// schemaWait bounds every wait of the workload.
const schemaWait = 15 * time.Second

func runSchemaWorkload(t *testing.T, tr *testRedis, kw *keyWatch) {
	opts := Options{KeyPrefix: tr.prefix, AllowPrivateNetworks: true, Timeout: 2 * time.Second,
		RetrySchedule: slices.Repeat([]time.Duration{20 * time.Millisecond}, 6),
		BreakAfter:    2, BreakFor: 100 * time.Millisecond, PortalKey: []byte(strings.Repeat("k", 32)), ReplayIndex: true,
		OperationalEvents: true} // a delivery failed for good counts in its window ({P:ops:…})
	d, err := New(tr.rdb, opts)
	require.NoError(t, err)
	replica, err := New(tr.rdb, opts)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	var wg sync.WaitGroup
	for _, r := range []*Dispatcher{d, replica} {
		wg.Go(func() { _ = r.Run(ctx) })
	}
	defer func() { cancel(); wg.Wait() }()

	w := &schemaWorkload{t: t, ctx: ctx, d: d, kw: kw, ok: newReceiver(t)}
	w.registry()
	w.traffic()
	w.replay()
	w.inFlight()
	w.breaker()
	w.redeliver()
	w.oauth2()
	w.admin()
}

// oauth2 delivers to a webhook with OAuth2 client credentials, scanning while its token is being
// fetched (the lock) and once it is cached.
func (w *schemaWorkload) oauth2() {
	ts := newTokenServer(w.t, "schema-client", "schema-secret", 3600)
	endpoint, _ := ts.endpoint(w.t)
	fetching, release := make(chan struct{}), make(chan struct{})
	var first sync.Once // only the first token request waits: an attempt that timed out meanwhile (a
	// loaded machine's scan outlasts Timeout) fetches again, and that request goes through
	ts.setBefore(func() {
		first.Do(func() {
			close(fetching)
			<-release
		})
	})
	w.create(Webhook{URL: endpoint.URL, Events: []string{"auth.*"}, Auth: &EndpointAuth{OAuth2: &OAuth2ClientCredentials{
		TokenURL: ts.srv.URL, ClientID: "schema-client", ClientSecret: "schema-secret"}}})
	var ids []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		ids = w.dispatch(Event{Type: "auth.checked", ID: "a1"}, false)
	}()
	select {
	case <-fetching:
	case <-time.After(schemaWait):
		w.t.Fatal("no token request")
	}
	w.kw.scan(w.t) // the lock is held
	close(release)
	<-done
	w.waitStatus(ids, StatusSuccess)
	w.kw.scan(w.t) // the token is cached
}

// create registers a webhook.
func (w *schemaWorkload) create(wh Webhook) *Webhook {
	w.t.Helper()
	created, err := w.d.Webhooks().Create(w.ctx, wh)
	require.NoError(w.t, err)
	return created
}

// dispatch dispatches (or, with enqueue, enqueues) an event and returns its deliveries' ids.
func (w *schemaWorkload) dispatch(evt Event, enqueue bool) []string {
	w.t.Helper()
	send := w.d.Dispatch
	if enqueue {
		send = w.d.Enqueue
	}
	rs, err := send(w.ctx, evt)
	require.NoError(w.t, err)
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.Delivery.ID)
	}
	return ids
}

// waitStatus waits until every delivery has the status.
func (w *schemaWorkload) waitStatus(ids []string, status Status) {
	w.t.Helper()
	var seen []string // what the last look found, for the failure message
	deadline := time.Now().Add(schemaWait)
	for {
		seen = seen[:0]
		for _, id := range ids {
			switch dl, err := w.d.Deliveries().Get(w.ctx, id); {
			case err != nil:
				seen = append(seen, id+": "+err.Error())
			case dl.Status != status:
				seen = append(seen, fmt.Sprintf("%s: %s after %d attempts (%s)", id, dl.Status, dl.Attempts, dl.LastError))
			}
		}
		if len(seen) == 0 {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("not within %s: deliveries %s; %s", schemaWait, status, strings.Join(seen, "; "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitCircuit waits until a webhook's circuit is in the state.
func (w *schemaWorkload) waitCircuit(id string, state CircuitState) {
	w.t.Helper()
	eventually(w.t, schemaWait, func() bool {
		h, err := w.d.Webhooks().Health(w.ctx, id)
		return err == nil && h.State == state
	}, "circuit "+string(state))
}

// answering creates a webhook subscribed to pattern on a receiver of its own that answers status.
func (w *schemaWorkload) answering(status int, pattern string) (*receiver, *Webhook) {
	w.t.Helper()
	rc := newReceiver(w.t)
	rc.status.Store(int32(status))
	return rc, w.create(Webhook{URL: rc.srv.URL, Events: []string{pattern}})
}

// serve makes one request to an admin handler and checks its status.
func (w *schemaWorkload) serve(h http.Handler, method, path, token, body string, want int) {
	w.t.Helper()
	req := httptest.NewRequestWithContext(w.ctx, method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(w.t, want, rec.Code, "%s %s: %s", method, path, rec.Body.String())
}

// registry creates webhooks of every kind: plain with headers, filtered, ed25519, rate-limited, a
// tenant's, and one created through the portal; and an event type.
func (w *schemaWorkload) registry() {
	url := w.ok.srv.URL
	w.plain = w.create(Webhook{URL: url, Events: []string{"order.*"}, Headers: map[string]string{"X-Team": "core"}})
	w.create(Webhook{URL: url, Events: []string{"order.created"}, Filter: json.RawMessage(`{"data.amount": {"$gte": 10}}`)})
	w.asym = w.create(Webhook{URL: url, Events: []string{"order.*"}, Asymmetric: true})
	w.create(Webhook{URL: url, Events: []string{"limited.*"}, RateLimit: 5})
	w.create(Webhook{URL: url, Events: []string{"order.*"}, Tenant: "acme"})
	token, err := w.d.PortalToken("globex", time.Hour)
	require.NoError(w.t, err)
	w.serve(w.d.Portal(), http.MethodPost, "/webhooks", token, `{"url": "`+url+`", "events": ["order.*"]}`, http.StatusCreated)
	// The catalog of event types, with a schema the traffic's order.created events satisfy.
	w.serve(w.d.Handler(), http.MethodPost, "/event-types", "", `{"name": "order.created",
		"schema": {"type": ["object", "null"], "properties": {"amount": {"type": "integer"}}}, "examples": [{"amount": 3}]}`, http.StatusCreated)
	w.kw.scan(w.t)
}

// traffic dispatches and enqueues to every webhook of registry, with duplicates, a filtered-out event
// and events over the rate limit.
func (w *schemaWorkload) traffic() {
	var ids []string
	for _, evt := range []Event{
		{Type: "order.created", ID: "o1", Data: map[string]int{"amount": 12}},
		{Type: "order.created", ID: "o2", Data: map[string]int{"amount": 1}},  // filtered out by one
		{Type: "order.created", ID: "o1", Data: map[string]int{"amount": 12}}, // a duplicate
		{Type: "order.created", ID: "o1", Tenant: "acme"},
		{Type: "order.created", ID: "o1", Tenant: "globex"},
		{Type: "limited.tick", ID: "l1"}, {Type: "limited.tick", ID: "l2"}, {Type: "limited.tick", ID: "l3"},
	} {
		ids = append(ids, w.dispatch(evt, false)...)
	}
	ids = append(ids, w.dispatch(Event{Type: "order.shipped", ID: "o3"}, true)...)
	ids = append(ids, w.dispatch(Event{Type: "order.shipped", ID: "o3", Tenant: "acme"}, true)...)
	w.kw.scan(w.t) // the rate limiter and the queues of the enqueued events exist now
	w.waitStatus(ids, StatusSuccess)
	w.kw.scan(w.t)
}

// replay sends a webhook created after traffic the events it missed (ReplayMissing, the replay route).
func (w *schemaWorkload) replay() {
	wh := w.create(Webhook{URL: w.ok.srv.URL, Events: []string{"order.*"}})
	n, err := w.d.ReplayMissing(w.ctx, wh.ID, time.Time{})
	require.NoError(w.t, err)
	require.Equal(w.t, 3, n, "o1, o2 and o3 of no tenant")
	w.serve(w.d.Handler(), http.MethodPost, "/webhooks/"+wh.ID+"/replay", "", `{"since": "2000-01-01T00:00:00Z"}`, http.StatusOK)
	var ids []string
	for _, id := range []string{"o1", "o2", "o3"} {
		dl, err := w.d.Deliveries().Find(w.ctx, wh.ID, id)
		require.NoError(w.t, err)
		ids = append(ids, dl.ID)
	}
	w.waitStatus(ids, StatusSuccess)
	w.kw.scan(w.t)
}

// inFlight holds an ordered inline attempt at its receiver while the keys are scanned, with a second
// event of the same order key queued behind it: the shard's inline zset holds the attempt's entry, and
// the key's sequence and the shard's blocked zset exist, only while the head is in flight, and so does
// the webhook's MaxConcurrency slot.
func (w *schemaWorkload) inFlight() {
	rc := newReceiver(w.t)
	w.create(Webhook{URL: rc.srv.URL, Events: []string{"held.*"}, MaxConcurrency: 1}) // its slot is held too
	arrived, release := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	defer released.Do(func() { close(release) }) // also when the test fails before releasing it
	hold := func(*http.Request) { once.Do(func() { close(arrived) }); <-release }
	rc.hook.Store(&hold)
	done := make(chan []string, 1)
	go func() { done <- w.dispatch(Event{Type: "held.one", ID: "h1", OrderKey: "k1"}, false) }()
	select {
	case <-arrived:
	case <-time.After(schemaWait):
		w.t.Fatal("the held attempt never reached its receiver")
	}
	behind := w.dispatch(Event{Type: "held.two", ID: "h2", OrderKey: "k1"}, true)
	w.kw.scan(w.t)
	released.Do(func() { close(release) })
	w.waitStatus(append(<-done, behind...), StatusSuccess)
}

// breaker opens a webhook's circuit (503s), parks a delivery behind it, then lets the probe close it.
func (w *schemaWorkload) breaker() {
	rc, wh := w.answering(http.StatusServiceUnavailable, "pay.*")
	ids := w.dispatch(Event{Type: "pay.done", ID: "p1"}, false)
	w.waitCircuit(wh.ID, CircuitOpen)
	ids = append(ids, w.dispatch(Event{Type: "pay.done", ID: "p2"}, false)...) // parked
	w.kw.scan(w.t)
	rc.status.Store(http.StatusOK)
	w.waitCircuit(wh.ID, CircuitClosed)
	w.waitStatus(ids, StatusSuccess)
	w.kw.scan(w.t)
}

// redeliver exhausts two deliveries' retries (400s), re-sends one with Redeliver and the other with
// Recover, and has a 410 disable a webhook.
func (w *schemaWorkload) redeliver() {
	rc, wh := w.answering(http.StatusBadRequest, "invoice.*")
	ids := append(w.dispatch(Event{Type: "invoice.paid", ID: "i1"}, false), w.dispatch(Event{Type: "invoice.paid", ID: "i2"}, false)...)
	w.waitStatus(ids, StatusFailed)
	w.kw.scan(w.t)
	rc.status.Store(http.StatusOK)
	_, err := w.d.Redeliver(w.ctx, ids[0])
	require.NoError(w.t, err)
	n, err := w.d.Recover(w.ctx, wh.ID, time.Time{}, time.Time{}, 0)
	require.NoError(w.t, err)
	require.Equal(w.t, 1, n, "Recover re-sends the delivery Redeliver did not")
	w.waitStatus(ids, StatusSuccess)

	_, gw := w.answering(http.StatusGone, "gone.*")
	w.waitStatus(w.dispatch(Event{Type: "gone.away", ID: "g1"}, false), StatusFailed)
	got, err := w.d.Webhooks().Get(w.ctx, gw.ID)
	require.NoError(w.t, err)
	require.True(w.t, got.Disabled, "a 410 disables the webhook")
	w.kw.scan(w.t)
}

// admin reads stats and health, sends a test event, changes, rotates and deletes webhooks, through
// the API and the admin handler.
func (w *schemaWorkload) admin() {
	_, err := w.d.Stats(w.ctx)
	require.NoError(w.t, err)
	h := w.d.Handler()
	w.serve(h, http.MethodGet, "/webhooks/"+w.plain.ID+"/stats", "", "", http.StatusOK)
	w.serve(h, http.MethodGet, "/webhooks/"+w.plain.ID+"/health", "", "", http.StatusOK)
	w.serve(h, http.MethodPatch, "/webhooks/"+w.plain.ID, "", `{"events": ["order.*", "ship.*"]}`, http.StatusOK)
	test, err := w.d.SendTest(w.ctx, w.plain.ID)
	require.NoError(w.t, err)
	w.waitStatus([]string{test.ID}, StatusSuccess)
	_, err = w.d.Webhooks().RotateSecret(w.ctx, w.plain.ID, time.Hour)
	require.NoError(w.t, err)
	w.waitStatus(w.dispatch(Event{Type: "ship.sent", ID: "s1"}, false), StatusSuccess)
	w.kw.scan(w.t)
	require.NoError(w.t, w.d.Webhooks().Delete(w.ctx, w.asym.ID))
	_, err = w.d.Webhooks().DeleteTenant(w.ctx, "acme")
	require.NoError(w.t, err)
	w.kw.scan(w.t)
}
