package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// expungeFixture is two tenants' data: acme's, to be expunged, and globex's, to be left as it is.
type expungeFixture struct {
	d              *Dispatcher
	acme, globex   []*Webhook
	acmeEvents     []string // acme's event ids
	acmePayload    string   // in every acme payload
	globexDelivery []string // globex's delivery ids
}

// acmeNeedles are what no key, field or value may hold once acme is expunged: its name, its webhook
// ids, its event ids and its payload bytes.
func (f *expungeFixture) acmeNeedles() []string {
	needles := []string{"acme", f.acmePayload}
	for _, w := range f.acme {
		needles = append(needles, w.ID)
	}
	return append(needles, f.acmeEvents...)
}

// newExpungeFixture makes acme's 3 webhooks (one rate-limited and capped, one failing with the
// breaker on) and globex's one, and enqueues events for acme's deliveries (a tenth ordered, each to
// the 3 webhooks) and a test send; an event no webhook takes (the replay index keeps it); and globex's
// events.
func newExpungeFixture(t *testing.T, tr *testRedis, d *Dispatcher, ok, failing *receiver, deliveries int) *expungeFixture {
	t.Helper()
	ctx := context.Background()
	f := &expungeFixture{d: d, acmePayload: "acme-card-" + randomHex(6)}
	for i, w := range []Webhook{
		{URL: ok.srv.URL, Events: []string{"order.*"}, Tenant: "acme", RateLimit: 1000, MaxConcurrency: 8},
		{URL: ok.srv.URL, Events: []string{"order.paid"}, Tenant: "acme"},
		{URL: failing.srv.URL, Events: []string{"order.*", "invoice.*"}, Tenant: "acme"},
		{URL: ok.srv.URL, Events: []string{"order.*"}, Tenant: "globex"},
	} {
		created, err := d.Webhooks().Create(ctx, w)
		require.NoError(t, err, "webhook %d", i)
		if w.Tenant == "acme" {
			f.acme = append(f.acme, created)
		} else {
			f.globex = append(f.globex, created)
		}
	}
	for i := range deliveries / 3 {
		evt := Event{Tenant: "acme", Type: "order.paid", ID: fmt.Sprintf("ord-%s-%d", randomHex(4), i),
			Data: map[string]any{"card": f.acmePayload, "i": i}}
		if i%10 == 0 {
			evt.OrderKey = fmt.Sprintf("cust-%d", i%7)
		}
		res, err := d.Enqueue(ctx, evt)
		require.NoError(t, err)
		require.Len(t, res, 3)
		f.acmeEvents = append(f.acmeEvents, evt.ID)
	}
	lone := Event{Tenant: "acme", Type: "nobody.listens", ID: "lone-" + randomHex(6), Data: map[string]string{"card": f.acmePayload}}
	_, err := d.Enqueue(ctx, lone)
	require.NoError(t, err)
	f.acmeEvents = append(f.acmeEvents, lone.ID)
	test, err := d.SendTest(ctx, f.acme[1].ID)
	require.NoError(t, err)
	f.acmeEvents = append(f.acmeEvents, test.EventID)
	for i := range 20 {
		res, err := d.Dispatch(ctx, Event{Tenant: "globex", Type: "order.paid", ID: fmt.Sprintf("g-%d", i), Data: map[string]int{"i": i}})
		require.NoError(t, err)
		f.globexDelivery = append(f.globexDelivery, res[0].Delivery.ID)
	}
	return f
}

// globexText is what Redis holds of globex: every key naming globex or its webhook, or holding either,
// with what it holds; the keys every webhook shares (the registry's webhooks and circuits, each
// shard's ready, inline and blocked zsets) are left out, and globex's webhook is compared whole.
func (f *expungeFixture) globexText(t *testing.T, tr *testRedis) map[string]string {
	t.Helper()
	text := tr.redisText(t)
	out := map[string]string{}
	for k := range naming(text, "globex", f.globex[0].ID) {
		if strings.HasSuffix(k, ":webhooks") || strings.HasSuffix(k, ":circuits") || strings.HasSuffix(k, ":ready") ||
			strings.HasSuffix(k, ":inline") || strings.HasSuffix(k, ":blocked") {
			continue
		}
		out[k] = text[k]
	}
	w, err := f.d.Webhooks().Get(context.Background(), f.globex[0].ID)
	require.NoError(t, err)
	out["webhook"] = fmt.Sprint(*w)
	return out
}

// expungeAll calls ExpungeTenant until it returns 0, at most bound times, and checks each call's
// commands against ExpungeTenant's bound (counted by cc, the Dispatcher's client's hook, when set).
func expungeAll(t *testing.T, d *Dispatcher, tenant string, bound int, cc *commandCounter, webhooks int) (calls, removed int) {
	t.Helper()
	ctx := context.Background()
	limit := 11*d.keys.Shards + 4*webhooks + 14
	for calls = 1; calls <= bound; calls++ {
		if cc != nil {
			cc.take()
		}
		n, err := d.ExpungeTenant(ctx, tenant)
		require.NoError(t, err)
		if cc != nil {
			assert.LessOrEqual(t, cc.take(), limit, "call %d: commands within 11·Shards + 4·W + 14", calls)
		}
		if n == 0 {
			return calls, removed
		}
		removed += n
	}
	t.Fatalf("ExpungeTenant still removing after %d calls", bound)
	return calls, removed
}

// TestExpungeTenantLeavesNothing: a tenant with deliveries over 3 webhooks (300, or 10,000 under
// WEBHOOKS_LONG_TESTS; some attempted, some failed with the circuit open, a tenth ordered), a test
// send and an event only the replay index keeps, is expunged by calls of ExpungeTenant, each within
// its documented command bound, until one returns 0; then no key, hash field, zset member, list item
// or stream entry in Redis names the tenant, its webhook ids or event ids, or holds its payload
// bytes, while another tenant's keys and webhook are exactly as they were and its deliveries still
// read. The operator's route does the same step (DELETE /tenants/{tenant}).
func TestExpungeTenantLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	client := tr.newClient(t)
	cc := &commandCounter{}
	client.AddHook(cc)
	d := newTestDispatcherOn(t, client, tr, Options{Shards: 8, ReplayIndex: true, BreakAfter: 2})
	ok, failing := newReceiver(t), newReceiver(t)
	failing.status.Store(http.StatusInternalServerError)
	deliveries := sized(300, 10_000)
	f := newExpungeFixture(t, tr, d, ok, failing, deliveries)
	for range 3 { // some deliveries attempted: successes, failures, an open circuit, hourly counts
		_, err := d.ProcessDue(ctx)
		if err != nil { // a pass on a loaded machine leaves attempts it has no lease left for to a later one
			require.ErrorIs(t, err, ErrDeferred)
		}
	}
	require.NotEmpty(t, failing.requests(), "the failing webhook was attempted")
	// A tenant's actions leave limiters naming it and its webhooks, whatever their answer.
	acmeDelivery, err := d.Deliveries().Find(ctx, f.acme[1].ID, f.acmeEvents[0])
	require.NoError(t, err)
	_, _ = d.RetryNow(ctx, acmeDelivery.ID)
	_, _ = d.Redeliver(ctx, acmeDelivery.ID)
	_, _ = d.ProbeNow(ctx, f.acme[1].ID)
	before := f.globexText(t, tr)
	require.NotEmpty(t, naming(tr.redisText(t), f.acmeNeedles()...), "acme's data is there")

	// The route first: one step, then the rest by the method.
	var step struct {
		Removed int `json:"removed"`
	}
	newAPI(t, d).do(http.MethodDelete, "/tenants/acme", "").ok(t, http.StatusOK, &step)
	require.Positive(t, step.Removed)
	calls, removed := expungeAll(t, d, "acme", deliveries/ExpungeBatch+20, cc, len(f.acme))
	t.Logf("%d deliveries: %d calls after the route's, %d items removed", deliveries, calls, step.Removed+removed)

	assert.Empty(t, naming(tr.redisText(t), f.acmeNeedles()...), "keys naming acme or holding its data")
	assert.Equal(t, before, f.globexText(t, tr), "globex's data is as it was")
	for _, id := range f.globexDelivery {
		_, err := d.Deliveries().Get(ctx, id)
		require.NoError(t, err)
	}
	n, err := d.ExpungeTenant(ctx, "acme")
	require.NoError(t, err)
	assert.Zero(t, n, "nothing left")
	_, err = d.ExpungeTenant(ctx, "")
	require.ErrorIs(t, err, ErrInvalidWebhook)
}

// TestExpungeTenantWhileTheWorkerRuns: a tenant is expunged while the worker runs and has attempts
// in flight to its webhooks (held by the receivers until the expunge is done, then answered, a
// failing webhook's with 500): the attempts end after their records are gone and recreate nothing —
// no record, circuit, hourly counter or concurrency slot naming the tenant's webhooks — and no key,
// field or value names the tenant, its ids or its payload once the worker has stopped.
func TestExpungeTenantWhileTheWorkerRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	// Through a client of another type than go-redis's own (a wrapper, as a user's may be): the
	// erasure cannot know whether it wraps a cluster, so it sends one transaction per hash tag
	// (TestExpungeTenantLeavesNothing takes the single Redis's one transaction).
	d := newTestDispatcherOn(t, wrappedClient{tr.newClient(t)}, tr, Options{Shards: 8, ReplayIndex: true, BreakAfter: 50, Concurrency: 16})
	ok, failing := newReceiver(t), newReceiver(t)
	failing.status.Store(http.StatusInternalServerError)
	f := newExpungeFixture(t, tr, d, ok, failing, sized(300, 3_000))
	release := make(chan struct{})
	var releaseOnce sync.Once
	answer := func() { releaseOnce.Do(func() { close(release) }) }
	defer answer() // a failed assertion below must not leave the receivers holding their requests
	var held atomic.Int32
	hold := func(*http.Request) { held.Add(1); <-release }
	ok.setHook(hold)
	failing.setHook(hold)

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var run sync.WaitGroup
	run.Go(func() { assert.NoError(t, d.Run(runCtx)) })
	eventually(t, 30e9, func() bool { return held.Load() >= 6 }, "attempts in flight to acme's webhooks")
	expungeAll(t, d, "acme", sized(300, 3_000)/ExpungeBatch+20, nil, len(f.acme))
	answer() // the attempts end now, after their records
	stop()
	run.Wait()

	assert.Empty(t, naming(tr.redisText(t), f.acmeNeedles()...), "keys naming acme or holding its data")
	n, err := d.ExpungeTenant(ctx, "acme")
	require.NoError(t, err)
	assert.Zero(t, n, "nothing was recreated")
}

// wrappedClient is a client of a type of its own around a go-redis client.
type wrappedClient struct{ redis.UniversalClient }
