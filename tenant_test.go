package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/admin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTenantIsolation, property-style: random tenants, webhooks, patterns and filters. Every request a
// receiver gets belongs to its webhook's tenant and passes its filter; every event a webhook selects
// reaches it once; the same event id under two tenants is two events with their own bodies; listings
// and Find never cross tenants.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	r := rand.New(rand.NewPCG(7, 11))
	tenants := []string{"", "acme", "globex", "initech"}
	patterns := []string{"*", "order.*", "order.paid", "user.*"}
	type hook struct {
		w     *Webhook
		rc    *receiver
		minN  int // its filter: data.n >= minN (0: no filter)
		typ   string
		types []string
	}
	var hooks []hook
	for range 12 {
		tenant, pattern := tenants[r.IntN(len(tenants))], patterns[r.IntN(len(patterns))]
		h := hook{rc: newReceiver(t), minN: r.IntN(3) * 3}
		spec := Webhook{URL: h.rc.srv.URL, Events: []string{pattern}, Tenant: tenant}
		if h.minN > 0 {
			spec.Filter = json.RawMessage(fmt.Sprintf(`{"data.n": {"$gte": %d}}`, h.minN))
		}
		w, err := d.Webhooks().Create(ctx, spec)
		require.NoError(t, err)
		h.w = w
		hooks = append(hooks, h)
	}
	types := []string{"order.paid", "order.created", "user.joined"}
	type sent struct {
		tenant, typ string
		n           int
	}
	events := map[string]sent{} // tenant + "/" + id -> event
	for i := range 40 {
		tenant, typ := tenants[r.IntN(len(tenants))], types[r.IntN(len(types))]
		id := fmt.Sprintf("evt_%d", i%10) // ids repeat across tenants
		key := tenant + "/" + id
		if _, dup := events[key]; dup {
			continue
		}
		n := r.IntN(10)
		events[key] = sent{tenant, typ, n}
		_, err := d.Dispatch(ctx, Event{Tenant: tenant, Type: typ, ID: id, Data: map[string]any{"tenant": tenant, "n": n}})
		require.NoError(t, err)
	}
	for _, h := range hooks {
		want := 0
		for key, e := range events {
			_ = key
			if e.tenant == h.w.Tenant && matchPattern(h.w.Events[0], e.typ) && e.n >= h.minN {
				want++
			}
		}
		reqs := h.rc.requests()
		assert.Len(t, reqs, want, "webhook %s (tenant %q, %s, n >= %d)", h.w.ID, h.w.Tenant, h.w.Events[0], h.minN)
		for _, req := range reqs {
			var body struct {
				ID   string `json:"id"`
				Type string `json:"type"`
				Data struct {
					Tenant string `json:"tenant"`
					N      int    `json:"n"`
				} `json:"data"`
			}
			require.NoError(t, json.Unmarshal(req.Body, &body))
			assert.Equal(t, h.w.Tenant, body.Data.Tenant, "a request of another tenant's event")
			assert.GreaterOrEqual(t, body.Data.N, h.minN, "a request its filter refuses")
			e, ok := events[h.w.Tenant+"/"+body.ID]
			require.True(t, ok)
			assert.Equal(t, e.typ, body.Type, "the body is its own tenant's event")
			assert.Equal(t, e.n, body.Data.N)
			dl, err := d.Deliveries().Find(ctx, h.w.ID, body.ID)
			require.NoError(t, err)
			assert.Equal(t, h.w.ID, dl.WebhookID)
		}
	}
	for _, tenant := range tenants {
		list, err := d.Webhooks().ListTenant(ctx, tenant)
		require.NoError(t, err)
		for _, w := range list {
			assert.Equal(t, tenant, w.Tenant, "ListTenant(%q) lists only its tenant", tenant)
		}
	}
}

// TestSameEventIDTwoTenants: two tenants' "evt_1" are two events, each with its own body.
func TestSameEventIDTwoTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	a, b := newReceiver(t), newReceiver(t)
	_, err := d.Webhooks().Create(ctx, Webhook{URL: a.srv.URL, Events: []string{"*"}, Tenant: "a"})
	require.NoError(t, err)
	_, err = d.Webhooks().Create(ctx, Webhook{URL: b.srv.URL, Events: []string{"*"}, Tenant: "b"})
	require.NoError(t, err)
	for _, tenant := range []string{"a", "b"} {
		res, err := d.Dispatch(ctx, Event{Tenant: tenant, Type: "x", ID: "evt_1", Data: tenant})
		require.NoError(t, err)
		require.Len(t, res, 1)
		require.False(t, res[0].Duplicate, "tenant %s's evt_1 is its own event", tenant)
	}
	require.Len(t, a.requests(), 1)
	require.Len(t, b.requests(), 1)
	assert.Contains(t, string(a.requests()[0].Body), `"data":"a"`)
	assert.Contains(t, string(b.requests()[0].Body), `"data":"b"`)
}

// TestTenantQuotaAndDelete: a tenant's webhooks are bounded by MaxWebhooksPerTenant; DeleteTenant
// deletes them all in one call, and no other tenant's.
func TestTenantQuotaAndDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{MaxWebhooksPerTenant: 2})
	rc := newReceiver(t)
	for range 2 {
		_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "t1"})
		require.NoError(t, err)
	}
	_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "t1"})
	require.ErrorIs(t, err, ErrTenantQuota)
	other, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "t2"})
	require.NoError(t, err)
	n, err := d.Webhooks().DeleteTenant(ctx, "t1")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	left, err := d.Webhooks().List(ctx)
	require.NoError(t, err)
	require.Len(t, left, 1)
	assert.Equal(t, other.ID, left[0].ID)
	_, err = d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "t1"})
	require.NoError(t, err, "room again after the delete")
	_, err = d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "bad tenant"})
	require.ErrorIs(t, err, ErrInvalidWebhook)
}

// TestCustomHeaders: reserved names are refused; set headers arrive with every attempt, and the
// signature still verifies.
func TestCustomHeaders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	for _, name := range []string{"webhook-signature", "Content-Type", "host", "Transfer-Encoding", "bad name", "Traceparent"} {
		_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Headers: map[string]string{name: "x"}})
		require.ErrorIs(t, err, ErrInvalidWebhook, "header %q", name)
	}
	_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Headers: map[string]string{"X-A": "a\r\nb"}})
	require.ErrorIs(t, err, ErrInvalidWebhook, "a line break in a value")
	w, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"},
		Headers: map[string]string{"authorization": "Bearer s3cret", "X-Team": "billing"}})
	require.NoError(t, err)
	_, err = d.Dispatch(ctx, Event{Type: "x", ID: "h1", Data: 1})
	require.NoError(t, err)
	req := rc.requests()[0]
	assert.Equal(t, "Bearer s3cret", req.Header.Get("Authorization"))
	assert.Equal(t, "billing", req.Header.Get("X-Team"))
	assert.Equal(t, "application/json", req.Header.Get("Content-Type"))
	require.NoError(t, Verify(w.Secret, req.Header, req.Body))
}

// TestV1aWebhook: a webhook created with an ed25519 key signs v1a, verified with its public key only;
// rotation keeps the kind and signs with both keys during the grace period.
func TestV1aWebhook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	w, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Asymmetric: true})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(w.Secret, "whsk_"))
	require.True(t, strings.HasPrefix(w.PublicKey, "whpk_"))
	_, err = d.Dispatch(ctx, Event{Type: "x", ID: "a1", Data: 1})
	require.NoError(t, err)
	req := rc.requests()[0]
	assert.True(t, strings.HasPrefix(req.Header.Get("Webhook-Signature"), "v1a,"))
	require.NoError(t, Verify(w.PublicKey, req.Header, req.Body))
	tampered := append([]byte{}, req.Body...)
	tampered[len(tampered)-2] ^= 1
	require.ErrorIs(t, Verify(w.PublicKey, req.Header, tampered), ErrInvalidSignature)

	rotated, err := d.Webhooks().RotateSecret(ctx, w.ID, time.Hour)
	require.NoError(t, err)
	require.NotEqual(t, w.PublicKey, rotated.PublicKey)
	_, err = d.Dispatch(ctx, Event{Type: "x", ID: "a2", Data: 2})
	require.NoError(t, err)
	req = rc.requests()[1]
	require.NoError(t, Verify(w.PublicKey, req.Header, req.Body), "the old key still verifies in the grace period")
	require.NoError(t, Verify(rotated.PublicKey, req.Header, req.Body))
}

// TestPortal: every route with a valid token works for the token's tenant; another tenant's ids answer
// 404; a missing, tampered, expired or otherwise-keyed token 401; the tenant cannot be set.
func TestPortal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	key := []byte(strings.Repeat("k", 32))
	d, clock := newClockedDispatcher(t, tr, Options{PortalKey: key})
	rc := newReceiver(t)
	mine, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "acme"})
	require.NoError(t, err)
	theirs, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "globex"})
	require.NoError(t, err)
	res, err := d.Dispatch(ctx, Event{Tenant: "globex", Type: "x", ID: "g1"})
	require.NoError(t, err)
	theirDelivery := res[0].Delivery.ID
	res, err = d.Dispatch(ctx, Event{Tenant: "acme", Type: "x", ID: "a1"})
	require.NoError(t, err)
	myDelivery := res[0].Delivery.ID

	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	srv := httptest.NewServer(d.Portal())
	t.Cleanup(srv.Close)
	call := func(tok, method, path, body string) int {
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		method, path, body string
		own, other         int // status for the token's tenant's id, and for another tenant's
	}{
		{"GET", "/webhooks/%s", "", 200, 404},
		{"PATCH", "/webhooks/%s", `{"description":"x"}`, 200, 404},
		{"POST", "/webhooks/%s/test", "", 201, 404},
		{"POST", "/webhooks/%s/rotate-secret", `{"grace_seconds":0}`, 200, 404},
		{"GET", "/webhooks/%s/deliveries", "", 200, 404},
		{"GET", "/webhooks/%s/secret", "", 200, 404},
		{"GET", "/webhooks/%s/health", "", 200, 404},
		{"GET", "/webhooks/%s/stats", "", 200, 404},
		{"POST", "/webhooks/%s/recover?since=2020-01-01T00:00:00Z", "", 200, 404},
		{"GET", "/deliveries/%s", "", 200, 404},
		{"POST", "/deliveries/%s/redeliver", "", 200, 404},
		{"DELETE", "/webhooks/%s", "", 204, 404},
	} {
		ownID, otherID := mine.ID, theirs.ID
		if strings.HasPrefix(tc.path, "/deliveries") {
			ownID, otherID = myDelivery, theirDelivery
		}
		assert.Equal(t, tc.other, call(token, tc.method, fmt.Sprintf(tc.path, otherID), tc.body), "%s %s of another tenant", tc.method, tc.path)
		assert.Equal(t, tc.own, call(token, tc.method, fmt.Sprintf(tc.path, ownID), tc.body), "%s %s", tc.method, tc.path)
	}
	assert.Equal(t, 400, call(token, "POST", "/webhooks", `{"url":"`+rc.srv.URL+`","events":["*"],"tenant":"globex"}`))
	assert.Equal(t, 201, call(token, "POST", "/webhooks", `{"url":"`+rc.srv.URL+`","events":["*"]}`))
	list, err := d.Webhooks().ListTenant(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 1, "created in the token's tenant")
	theirsNow, err := d.Webhooks().Get(ctx, theirs.ID)
	require.NoError(t, err)
	assert.Equal(t, theirs.Secret, theirsNow.Secret, "the other tenant's webhook was not touched")

	other, err := New(tr.rdb, Options{KeyPrefix: tr.prefix, PortalKey: []byte(strings.Repeat("o", 32)), BreakAfter: -1})
	require.NoError(t, err)
	foreign, err := other.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	for name, tok := range map[string]string{"absent": "", "tampered": token[:len(token)-2] + "xx",
		"other key": foreign, "garbage": "wpt1.abc"} {
		assert.Equal(t, 401, call(tok, "GET", "/webhooks", ""), name)
	}
	clock.Advance(time.Hour)
	assert.Equal(t, 401, call(token, "GET", "/webhooks", ""), "expired")
}

// FuzzPortalToken: parsing never panics, and only a token the key signed, unexpired, parses.
func FuzzPortalToken(f *testing.F) {
	key := []byte(strings.Repeat("k", 32))
	now := time.Unix(1_800_000_000, 0)
	d := &Dispatcher{opts: Options{PortalKey: key}, now: func() time.Time { return now }}
	good, err := d.PortalToken("acme", time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add("wpt1..")
	f.Add("wpt1.YWNtZQo5OTk5OTk5OTk5.x")
	f.Fuzz(func(t *testing.T, tok string) {
		tenant, err := admin.ParsePortalToken(key, tok, now, validateTenant)
		if err != nil {
			return
		}
		if tok != good {
			// Another string accepted must carry the same signed payload (base64 has no second
			// spelling of it in the unpadded URL alphabet).
			t.Fatalf("accepted %q (tenant %q)", tok, tenant)
		}
	})
}
