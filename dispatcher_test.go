package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks/internal/httpdest"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/replay"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDispatchSequentialDuplicateSendsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc1, rc2, rcOther := newReceiver(t), newReceiver(t), newReceiver(t)
	w1 := mustCreate(t, d, rc1, "pool.created")
	w2 := mustCreate(t, d, rc2, "pool.*")
	mustCreate(t, d, rcOther, "account.*")

	evt := Event{Type: "pool.created", ID: "evt-1", Data: map[string]any{"pool": 7}}
	first, err := d.Dispatch(ctx, evt)
	require.NoError(t, err)
	require.Len(t, first, 2)
	second, err := d.Dispatch(ctx, evt)
	require.NoError(t, err)
	require.Len(t, second, 2)

	assert.Equal(t, 1, rc1.count(), "one request to the first subscriber")
	assert.Equal(t, 1, rc2.count(), "one request to the second subscriber")
	assert.Equal(t, 0, rcOther.count(), "nothing to a webhook that does not subscribe")

	byHook := map[string]Result{}
	for i, r := range first {
		require.NoError(t, r.Err)
		assert.False(t, r.Duplicate)
		require.NotNil(t, r.Delivery)
		assert.Equal(t, StatusSuccess, r.Delivery.Status)
		assert.Equal(t, 1, r.Delivery.Attempts)
		assert.Equal(t, 200, r.Delivery.LastStatusCode)
		dup := second[i]
		require.NoError(t, dup.Err)
		assert.True(t, dup.Duplicate, "the repeated call is a duplicate")
		require.NotNil(t, dup.Delivery)
		assert.Equal(t, r.Delivery.ID, dup.Delivery.ID, "the duplicate returns the original record")
		assert.Equal(t, StatusSuccess, dup.Delivery.Status)
		assert.Equal(t, 1, dup.Delivery.Attempts)
		byHook[r.WebhookID] = r
	}
	require.Contains(t, byHook, w1.ID)
	require.Contains(t, byHook, w2.ID)

	for _, w := range []*Webhook{w1, w2} {
		list, err := d.Deliveries().List(ctx, w.ID, 10)
		require.NoError(t, err)
		require.Len(t, list, 1, "one delivery record per pair")
		assert.Equal(t, byHook[w.ID].Delivery.ID, list[0].ID)
		found, err := d.Deliveries().Find(ctx, w.ID, evt.ID)
		require.NoError(t, err)
		assert.Equal(t, list[0].ID, found.ID)
	}

	// The request is what Standard Webhooks receivers expect.
	req := rc1.requests()[0]
	assert.Equal(t, byHook[w1.ID].Delivery.ID, req.Header.Get("webhook-id"))
	require.NoError(t, Verify(w1.Secret, req.Header, req.Body))
	var body map[string]any
	require.NoError(t, json.Unmarshal(req.Body, &body))
	assert.Equal(t, "evt-1", body["id"])
	assert.Equal(t, "pool.created", body["type"])
	assert.Equal(t, map[string]any{"pool": float64(7)}, body["data"])
	assert.NotEmpty(t, body["timestamp"])
}

func TestSubscriptionMatching(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern, eventType string
		match              bool
	}{
		{"pool.created", "pool.created", true},
		{"pool.created", "pool.created.v2", false},
		{"pool.created", "pool", false},
		{"pool.*", "pool.created", true},
		{"pool.*", "pool.assets.locked", true},
		{"pool.*", "pool", false},
		{"pool.*", "pooled.created", false},
		{"pool.assets.*", "pool.assets.locked", true},
		{"pool.assets.*", "pool.created", false},
		{"*", "anything.at.all", true},
		{"*", "x", true},
	}
	for _, c := range cases {
		t.Run(c.pattern+"~"+c.eventType, func(t *testing.T) {
			assert.Equal(t, c.match, matchPattern(c.pattern, c.eventType))
			// The index lookup selects exactly the patterns that match.
			assert.Equal(t, c.match, contains(patternsFor(c.eventType), c.pattern))
		})
	}

	// End to end: the registry index resolves the same set.
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	want := map[string]bool{}
	for _, c := range []struct {
		pattern string
		match   bool
	}{{"pool.assets.locked", true}, {"pool.*", true}, {"pool.assets.*", true}, {"*", true}, {"pool.created", false}, {"pool.assets.locked.*", false}, {"account.*", false}} {
		w := mustCreate(t, d, rc, c.pattern)
		want[w.ID] = c.match
	}
	res, err := d.Dispatch(ctx, Event{Type: "pool.assets.locked", ID: "e-match"})
	require.NoError(t, err)
	got := map[string]bool{}
	for _, r := range res {
		require.NoError(t, r.Err)
		got[r.WebhookID] = true
	}
	for id, m := range want {
		assert.Equal(t, m, got[id], "webhook %s", id)
	}
	assert.Equal(t, 4, rc.count())
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestDisabledWebhookGetsNoDeliveryUntilReenabled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	w := mustCreate(t, d, rc, "pool.*")
	w.Disabled = true
	_, err := d.Webhooks().Update(ctx, *w)
	require.NoError(t, err)

	res, err := d.Dispatch(ctx, Event{Type: "pool.created", ID: "e1"})
	require.NoError(t, err)
	assert.Empty(t, res, "a disabled webhook is not a target")
	_, err = d.Deliveries().Find(ctx, w.ID, "e1")
	require.ErrorIs(t, err, ErrNotFound)

	w.Disabled = false
	_, err = d.Webhooks().Update(ctx, *w)
	require.NoError(t, err)
	res, err = d.Dispatch(ctx, Event{Type: "pool.created", ID: "e1"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.False(t, res[0].Duplicate, "the first delivery after re-enabling is fresh")
	assert.Equal(t, StatusSuccess, res[0].Delivery.Status)
	assert.Equal(t, 1, rc.count())
}

func TestSendTestNeverCollapses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	clock := newTestClock()
	d := newTestDispatcher(t, tr, Options{})
	d.now = clock.Now // the same millisecond for both sends
	rc := newReceiver(t)
	w := mustCreate(t, d, rc, "pool.created")
	w.Disabled = true
	_, err := d.Webhooks().Update(ctx, *w)
	require.NoError(t, err)

	a, err := d.SendTest(ctx, w.ID)
	require.NoError(t, err)
	b, err := d.SendTest(ctx, w.ID)
	require.NoError(t, err)
	assert.NotEqual(t, a.ID, b.ID)
	assert.NotEqual(t, a.EventID, b.EventID)
	assert.True(t, strings.HasPrefix(a.EventID, "test_"))
	assert.Equal(t, TestEventType, a.EventType)
	assert.Equal(t, StatusSuccess, a.Status)
	assert.Equal(t, StatusSuccess, b.Status)
	assert.Len(t, rc.perDelivery(), 2, "two test sends, two requests, even to a disabled webhook")

	_, err = d.SendTest(ctx, "wh_missing")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestFailedAttemptIsPendingAndScheduled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	w := mustCreate(t, d, rc, "pool.created")

	before := time.Now().Truncate(time.Millisecond) // times are kept in whole milliseconds
	res, err := d.Dispatch(ctx, Event{Type: "pool.created", ID: "e-fail"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	dl := res[0].Delivery
	assert.Equal(t, StatusPending, dl.Status)
	assert.Equal(t, 1, dl.Attempts)
	assert.Equal(t, 500, dl.LastStatusCode)
	assert.Equal(t, "HTTP 500", dl.LastError)
	first := DefaultRetrySchedule()[0]
	assert.WithinRange(t, dl.NextAttemptAt, before.Add(time.Duration(float64(first)*0.8)), time.Now().Add(time.Duration(float64(first)*1.2)))

	stored, err := d.Deliveries().Get(ctx, dl.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusPending, stored.Status)
	assert.Equal(t, dl.NextAttemptAt.UnixMilli(), stored.NextAttemptAt.UnixMilli())
	require.Len(t, stored.History, 1)
	assert.Equal(t, 500, stored.History[0].StatusCode)
	assert.Equal(t, "ok", stored.History[0].Response)

	_, score, ok := queued(t, tr, d, shardOf("e-fail"), w.ID, dl.ID)
	require.True(t, ok, "the retry is durably scheduled")
	assert.Equal(t, float64(dl.NextAttemptAt.UnixMilli()), score)
	ready, err := tr.rdb.ZScore(ctx, d.keys.Ready(shardOf("e-fail")), w.ID).Result()
	require.NoError(t, err, "the webhook is scheduled in its shard")
	assert.Equal(t, score, ready)
	assert.Equal(t, w.ID, stored.WebhookID)
}

// TestClaimIsTheRecord: the pair's claim is its record, one key with the retention as its TTL, so they
// cannot expire apart; the event body and the index entry live as long.
func TestClaimIsTheRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{Retention: 50 * time.Hour, RetrySchedule: []time.Duration{time.Minute}})
	rc := newReceiver(t)
	w := mustCreate(t, d, rc, "pool.created")
	res, err := d.Dispatch(ctx, Event{Type: "pool.created", ID: "e-ttl"})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	assert.Equal(t, deliveryIDFor(w.ID, "e-ttl"), res[0].Delivery.ID, "the pair names its delivery")

	s := shardOf("e-ttl")
	h := rdb.DeliveryHash(res[0].Delivery.ID)
	var named []string
	for _, k := range tr.keys(t) {
		if strings.Contains(k, h) {
			named = append(named, k)
		}
	}
	assert.Equal(t, []string{d.keys.Delivery(s, res[0].Delivery.ID)}, named, "one key per pair: the record is the claim")
	ttls := tr.pttls(t, d.keys.Delivery(s, res[0].Delivery.ID), d.keys.Event(s, "e-ttl"), d.keys.Index(s, w.ID))
	recordTTL, evtTTL, idxTTL := ttls[0], ttls[1], ttls[2]
	assert.Greater(t, recordTTL, 49*time.Hour)
	assert.InDelta(t, recordTTL.Milliseconds(), evtTTL.Milliseconds(), 50, "the body lives as long as the record")
	assert.GreaterOrEqual(t, idxTTL+50*time.Millisecond, recordTTL, "the index lives at least as long as the record")
	assert.LessOrEqual(t, idxTTL, recordTTL+recordTTL/64+50*time.Millisecond, "and at most 1/64 longer")
	assert.WithinDuration(t, time.Now().Add(50*time.Hour), res[0].Delivery.ExpiresAt, time.Minute)
}

func TestInvalidEventClaimsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{MaxPayloadBytes: 1024})
	rc := newReceiver(t)
	mustCreate(t, d, rc, "*")
	registryKeys := len(tr.keys(t))
	cases := []struct {
		name string
		evt  Event
	}{
		{"empty type", Event{ID: "x"}},
		{"empty id", Event{Type: "a.b"}},
		{"type with space", Event{Type: "a b", ID: "x"}},
		{"type with empty segment", Event{Type: "a..b", ID: "x"}},
		{"type ending in dot", Event{Type: "a.", ID: "x"}},
		{"type too long", Event{Type: strings.Repeat("a", 257), ID: "x"}},
		{"id too long", Event{Type: "a", ID: strings.Repeat("i", 257)}},
		{"id with newline", Event{Type: "a", ID: "x\ny"}},
		{"id with NUL", Event{Type: "a", ID: "x\x00"}},
		{"id not UTF-8", Event{Type: "a", ID: "\xff\xfe"}},
		{"data not encodable", Event{Type: "a", ID: "x", Data: func() {}}},
		{"payload too large", Event{Type: "a", ID: "x", Data: strings.Repeat("p", 2048)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := d.Dispatch(ctx, c.evt)
			require.ErrorIs(t, err, ErrInvalidEvent)
			assert.Nil(t, res)
		})
	}
	assert.Len(t, tr.keys(t), registryKeys, "no key was written for an invalid event")
	assert.Equal(t, 0, rc.count())
}

func TestOddEventIDsAreDeliveredOnceEach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	mustCreate(t, d, rc, "*")
	ids := []string{"a:b", "{tag}", "}{", "with space", "ünïcødé-事件", "a:b:", "0", strings.Repeat("z", 256), `"quoted"\`}
	for _, id := range ids {
		for range 2 {
			res, err := d.Dispatch(ctx, Event{Type: "odd.id", ID: id})
			require.NoError(t, err, id)
			require.Len(t, res, 1)
			require.NoError(t, res[0].Err, id)
		}
	}
	per := rc.perDelivery()
	assert.Len(t, per, len(ids), "one delivery per distinct id")
	for id, n := range per {
		assert.Equal(t, 1, n, id)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	cases := []struct {
		name string
		opts Options
	}{
		{"retention shorter than the retry horizon", Options{Retention: time.Hour}},
		{"negative timeout", Options{Timeout: -time.Second}},
		{"huge timeout", Options{Timeout: time.Hour}},
		{"brace in prefix", Options{KeyPrefix: "a{b"}},
		{"zero delay", Options{RetrySchedule: []time.Duration{0}}},
		{"negative payload bound", Options{MaxPayloadBytes: -1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(rdb, c.opts)
			require.ErrorIs(t, err, ErrInvalidOptions)
		})
	}
	_, err := New(nil, Options{})
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = New(rdb, Options{})
	require.NoError(t, err, "New does no I/O: a Redis that does not answer does not fail it (TestNewDoesNoIO)")
	tr := newTestRedis(t)
	d, err := New(tr.rdb, Options{KeyPrefix: tr.prefix})
	require.NoError(t, err)
	assert.Greater(t, d.lease, d.opts.Timeout, "a lease outlives the attempt it covers")
}

func TestRegistryCRUD(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	repo := d.Webhooks()
	w, err := repo.Create(ctx, Webhook{URL: "https://example.com/hook", Events: []string{"a.b", "a.*"}, Description: "mine"})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(w.Secret, "whsec_"))
	require.NoError(t, validateSigningSecret(w.Secret), "a whsec_ secret of at least minSecretBytes")
	assert.False(t, w.CreatedAt.IsZero())
	assert.NotContains(t, w.String(), w.Secret)

	got, err := repo.Get(ctx, w.ID)
	require.NoError(t, err)
	assert.Equal(t, w.Secret, got.Secret)
	got.URL, got.Events = "https://example.org/new", []string{"*"}
	up, err := repo.Update(ctx, *got)
	require.NoError(t, err)
	assert.Equal(t, "https://example.org/new", up.URL)
	assert.Equal(t, w.Secret, up.Secret, "update keeps the secret")
	list, err := repo.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.NoError(t, repo.Delete(ctx, w.ID))
	_, err = repo.Get(ctx, w.ID)
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, repo.Delete(ctx, w.ID), ErrNotFound)
	_, err = repo.Update(ctx, Webhook{ID: "wh_nope", URL: "https://x.y", Events: []string{"*"}})
	require.ErrorIs(t, err, ErrNotFound)
	subs, err := repo.subscribers(ctx, "", "a.b")
	require.NoError(t, err)
	assert.Empty(t, subs, "a deleted webhook leaves every subscriber index")

	for _, bad := range []Webhook{
		{URL: "ftp://x.y", Events: []string{"*"}},
		{URL: "https://x.y"},
		{URL: "https://x.y", Events: []string{"a..b"}},
		{URL: "https://x.y", Events: []string{"a.*.b"}},
		{URL: "/relative", Events: []string{"*"}},
		{URL: "https://x.y/" + strings.Repeat("p", 2048), Events: []string{"*"}},
	} {
		_, err := repo.Create(ctx, bad)
		require.ErrorIs(t, err, ErrInvalidWebhook, "%+v", bad)
	}
}

func TestRegistryChangesReachOtherReplicasWithinASecond(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	a := newTestDispatcher(t, tr, Options{})
	b := newTestDispatcherOn(t, tr.newClient(t), tr, Options{})
	rc := newReceiver(t)
	// b has resolved (and cached) the type before the webhook exists.
	res, err := b.Dispatch(ctx, Event{Type: "x.y", ID: "before"})
	require.NoError(t, err)
	assert.Empty(t, res)
	mustCreate(t, a, rc, "x.*")
	time.Sleep(subscriberCacheTTL)
	res, err = b.Dispatch(ctx, Event{Type: "x.y", ID: "after"})
	require.NoError(t, err)
	require.Len(t, res, 1, "b sees a's webhook once its cache is a second old")
	assert.Equal(t, 1, rc.count())
}

func TestDispatchReportsRedisFailurePerTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcherOn(t, tr.newClient(t), tr, Options{})
	d.now = newTestClock().Now // held still: the subscribers cached below stay fresh however slow the machine
	rc := newReceiver(t)
	mustCreate(t, d, rc, "a.*")
	mustCreate(t, d, rc, "a.*")
	_, err := d.Dispatch(ctx, Event{Type: "a.b", ID: "warm"}) // caches the subscribers
	require.NoError(t, err)
	fail := errors.New("injected")
	d.rdb.AddHook(failingHook{err: fail})
	res, err := d.Dispatch(ctx, Event{Type: "a.b", ID: "cold"})
	require.ErrorIs(t, err, ErrNotAccepted, "an unclaimed target makes the event not accepted")
	require.ErrorIs(t, err, fail, "the cause is joined")
	require.Len(t, res, 2)
	for _, r := range res {
		require.ErrorIs(t, r.Err, fail)
		require.Nil(t, r.Delivery)
		require.False(t, r.Accepted())
	}
	assert.Equal(t, 2, rc.count(), "nothing was sent for the unclaimed event")
}

// failingHook fails every command.
type failingHook struct {
	passHook
	err error
}

func (h failingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { cmd.SetErr(h.err); return h.err }
}
func (h failingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { return h.err }
}

// TestAnEventIDNamesOneEvent: an event id dispatched again with the same type and data (at another
// time) is the same event: a webhook that subscribed since gets the body stored by the first dispatch.
// With another type or other data it is refused (ErrEventConflict, ErrInvalidEvent), by Dispatch and
// Enqueue alike, before anything is claimed: no webhook gets the stored body of an event it did not
// subscribe to (issue 21: user.deleted id 42, then order.paid id 42).
func TestAnEventIDNamesOneEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	first, later, paid := newReceiver(t), newReceiver(t), newReceiver(t)
	mustCreate(t, d, first, "e.*")
	_, err := d.Dispatch(ctx, Event{Type: "e.x", ID: "one", Data: "original", Time: time.Unix(1, 0)})
	require.NoError(t, err)
	mustCreate(t, d, later, "e.*")
	mustCreate(t, d, paid, "order.paid")
	res, err := d.Dispatch(ctx, Event{Type: "e.x", ID: "one", Data: "original", Time: time.Unix(2, 0)})
	require.NoError(t, err, "the same event at another time")
	require.Len(t, res, 2)
	require.Equal(t, 1, later.count())
	assert.Equal(t, string(first.requests()[0].Body), string(later.requests()[0].Body), "both got the first body")

	for _, evt := range []Event{
		{Type: "e.x", ID: "one", Data: "changed"},
		{Type: "order.paid", ID: "one", Data: "original"},
	} {
		for _, send := range []func(context.Context, Event) ([]Result, error){d.Dispatch, d.Enqueue} {
			res, err := send(ctx, evt)
			require.ErrorIs(t, err, ErrEventConflict, "%s %v", evt.Type, evt.Data)
			require.ErrorIs(t, err, ErrInvalidEvent)
			assert.Nil(t, res)
		}
	}
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing was claimed for the refused events")
	assert.Equal(t, 1, first.count(), "the first webhook got nothing more")
	assert.Equal(t, 1, later.count())
	assert.Zero(t, paid.count(), "the order.paid webhook never gets the e.x body")
	_, err = d.Deliveries().Find(ctx, webhookOn(t, d, paid.srv.URL), "one")
	require.ErrorIs(t, err, ErrNotFound)
}

// webhookOn returns the id of the webhook on url.
func webhookOn(t *testing.T, d *Dispatcher, url string) string {
	t.Helper()
	all, err := d.Webhooks().List(context.Background())
	require.NoError(t, err)
	for _, w := range all {
		if w.URL == url {
			return w.ID
		}
	}
	t.Fatalf("no webhook on %s", url)
	return ""
}

// commandCount counts the commands a client sends, pipelined or not, and the items of their replies.
// An EVALSHA answered NOSCRIPT is not counted: the script then goes again by EVAL, which is, and other
// tests (TestScriptFlushKeepsWorking, internal/rdb's) flush the shared server's scripts.
type commandCount struct {
	passHook
	n, items atomic.Int32
}

func (h *commandCount) add(cmds ...redis.Cmder) {
	for _, c := range cmds {
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			continue
		}
		h.n.Add(1)
		switch c := c.(type) {
		case *redis.MapStringStringCmd:
			h.items.Add(int32(len(c.Val())))
		case *redis.StringSliceCmd:
			h.items.Add(int32(len(c.Val())))
		case *redis.SliceCmd:
			h.items.Add(int32(len(c.Val())))
		case *redis.Cmd: // a script's reply
			if v, ok := c.Val().([]any); ok {
				h.items.Add(int32(len(v)))
			}
		}
	}
}

func (h *commandCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if !redis.HasErrorPrefix(err, "NOSCRIPT") {
			h.add(cmd)
		}
		return err
	}
}
func (h *commandCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.add(cmds...)
		return err
	}
}

// TestResolutionCostDoesNotGrowWithTheRegistry: resolving the subscribers of a type reads the same
// commands whether 10 or 300 other webhooks are registered.
func TestResolutionCostDoesNotGrowWithTheRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	client := tr.newClient(t)
	count := &commandCount{}
	client.AddHook(count)
	d := newTestDispatcherOn(t, client, tr, Options{})
	for i := range 4 {
		_, err := d.Webhooks().Create(ctx, Webhook{URL: "https://example.com/" + strconv.Itoa(i), Events: []string{"pool.created"}})
		require.NoError(t, err)
	}
	measure := func() [2]int32 {
		d.webhooks.invalidate()
		count.n.Store(0)
		count.items.Store(0)
		subs, err := d.webhooks.subscribers(ctx, "", "pool.created")
		require.NoError(t, err)
		require.Len(t, subs, 4)
		return [2]int32{count.n.Load(), count.items.Load()}
	}
	grow := func(n int) {
		for i := range n {
			_, err := d.Webhooks().Create(ctx, Webhook{URL: "https://example.org/" + strconv.Itoa(i), Events: []string{"other" + strconv.Itoa(i) + ".*"}})
			require.NoError(t, err)
		}
	}
	grow(10)
	measure() // the first read may open a connection, whose handshake the hook also counts
	small := measure()
	grow(290)
	assert.Equal(t, small, measure(), "the same commands and reply items with 300 unrelated webhooks")
	assert.Equal(t, [2]int32{1, 4}, small, "one script reading the event type's patterns, returning only the 4 subscribers")
}

func TestRetryAfterIsBounded(t *testing.T) {
	t.Parallel()
	now := time.Now()
	cases := []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"120", 120 * time.Second},
		{"86400", MaxRetryAfter},
		{"-5", 0},
		{"soon", 0},
		{now.Add(30 * time.Minute).UTC().Format(http.TimeFormat), 30 * time.Minute},
		{now.Add(48 * time.Hour).UTC().Format(http.TimeFormat), MaxRetryAfter},
	}
	for _, c := range cases {
		got := min(httpdest.ParseRetryAfter(c.header, now), MaxRetryAfter)
		assert.InDelta(t, c.want.Seconds(), got.Seconds(), 1, "Retry-After %q", c.header)
	}
}

// TestReturnedDeliveryIsTheStoredOne: what Dispatch and Redeliver return is what a later Get reads.
func TestReturnedDeliveryIsTheStoredOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{RetrySchedule: []time.Duration{}})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	mustCreate(t, d, rc, "x")
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "same"})
	require.NoError(t, err)
	stored, err := d.Deliveries().Get(ctx, res[0].Delivery.ID)
	require.NoError(t, err)
	assert.Equal(t, stored, res[0].Delivery)
	rc.status.Store(http.StatusOK)
	redelivered, err := d.Redeliver(ctx, res[0].Delivery.ID)
	require.NoError(t, err)
	stored, err = d.Deliveries().Get(ctx, res[0].Delivery.ID)
	require.NoError(t, err)
	assert.Equal(t, stored, redelivered)
	assert.Len(t, stored.History, 2)
}

// TestRoundTripsPerDispatch: once subscribers are cached, a duplicate Dispatch costs 1 Redis round trip
// whatever its number of targets (the read of its records by the Dispatcher that claimed it, the
// claim by another), and a fresh one 2: the claim, and one outcome script for the outcomes of its 4
// attempts, which end within worker.SettleLinger of each other.
func TestRoundTripsPerDispatch(t *testing.T) {
	ctx := context.Background()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	rt := &roundTrips{}
	c.AddHook(rt)
	d := newTestDispatcherOn(t, c, tr, Options{})
	rc := newReceiver(t)
	for range 4 {
		mustCreate(t, d, rc, "x")
	}
	// One shard, so one node of a cluster: the warm-up loads the scripts there and caches the subscribers.
	ids := eventIDsInShard(t, "rt", 0, 3)
	// The pool opens a connection for each outcome write that finds none idle, and the hook counts its
	// handshake (HELLO, CLIENT SETINFO): open enough connections to the shard's node first, so that the
	// counts below are the Dispatch's own round trips.
	node, ok := c.(*redis.Client)
	if cc, isCluster := c.(*redis.ClusterClient); isCluster {
		var err error
		node, err = cc.MasterForKey(ctx, d.keys.Event(0, ids[0]))
		require.NoError(t, err)
		ok = true
	}
	require.True(t, ok)
	var conns []*redis.Conn
	for range 8 {
		cn := node.Conn()
		require.NoError(t, cn.Ping(ctx).Err())
		conns = append(conns, cn)
	}
	for _, cn := range conns {
		require.NoError(t, cn.Close()) // back to the pool, idle
	}
	// Another Dispatcher on the same client never claimed these events: its duplicates are answered by
	// the claim, not by a read of the records.
	other := newTestDispatcherOn(t, c, tr, Options{})
	for _, disp := range []*Dispatcher{d, d, other} { // fresh, then duplicates: every script below loaded, subscribers cached
		_, err := disp.Dispatch(ctx, Event{Type: "x", ID: ids[0]})
		require.NoError(t, err)
	}

	for _, tc := range []struct {
		d     *Dispatcher
		id    string
		trips int32 // at most; a duplicate exactly
	}{{d, ids[1], 2}, {d, ids[1], 1}, {other, ids[1], 1}, {d, ids[2], 2}} {
		rt.n.Store(0)
		res, err := tc.d.Dispatch(ctx, Event{Type: "x", ID: tc.id})
		require.NoError(t, err)
		require.Len(t, res, 4)
		for _, r := range res {
			require.NoError(t, r.Err)
		}
		if res[0].Duplicate {
			assert.Equal(t, tc.trips, rt.n.Load(), "event %s (duplicate)", tc.id)
		} else {
			assert.LessOrEqual(t, rt.n.Load(), tc.trips, "event %s", tc.id)
			assert.GreaterOrEqual(t, rt.n.Load(), int32(2), "event %s: a claim and at least one outcome write", tc.id)
		}
	}
	assert.Equal(t, 12, rc.count(), "4 requests per fresh event")
}

// TestBytesDataIsSentAsJSON: Event.Data given as a []byte of JSON is the body's "data" as it is (not a
// base64 string, as encoding/json would make it); a []byte that is not JSON is refused with
// ErrInvalidEvent before anything is claimed.
func TestBytesDataIsSentAsJSON(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	mustCreate(t, d, rc, "*")
	ctx := context.Background()
	_, err := d.Dispatch(ctx, Event{Type: "a.b", ID: "e1", Data: []byte(`{"pool":42}`)})
	require.NoError(t, err)
	require.Equal(t, 1, rc.count())
	var body struct {
		Data json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(rc.requests()[0].Body, &body))
	assert.JSONEq(t, `{"pool":42}`, string(body.Data))
	_, err = d.Dispatch(ctx, Event{Type: "a.b", ID: "e2", Data: []byte("not json")})
	require.ErrorIs(t, err, ErrInvalidEvent)
	dl, err := d.Deliveries().Find(ctx, mustFirstWebhook(t, d).ID, "e2")
	assert.ErrorIs(t, err, ErrNotFound, "nothing claimed: %v", dl)
	assert.Equal(t, 1, rc.count())
}

// mustFirstWebhook is the Dispatcher's only webhook.
func mustFirstWebhook(t *testing.T, d *Dispatcher) *Webhook {
	t.Helper()
	ws, err := d.Webhooks().List(context.Background())
	require.NoError(t, err)
	require.Len(t, ws, 1)
	return ws[0]
}

// TestRedeliverResendsASuccess: Redeliver of a delivery that succeeded sends it once more, with the
// same webhook-id and body, and records the attempt in its history; eight concurrent calls send it
// once; within replay.ResendQuiet of its last attempt it is returned unchanged.
func TestRedeliverResendsASuccess(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	mustCreate(t, d, rc, "*")
	ctx := context.Background()
	res, err := d.Dispatch(ctx, Event{Type: "a.b", ID: "e1", Data: map[string]int{"n": 1}})
	require.NoError(t, err)
	require.Equal(t, StatusSuccess, res[0].Delivery.Status)
	id := res[0].Delivery.ID
	dl, err := d.Redeliver(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, 1, dl.Attempts, "just delivered: returned unchanged")
	require.Equal(t, 1, rc.count())
	clock.Advance(replay.ResendQuiet)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, err := d.Redeliver(ctx, id)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	reqs := rc.requests()
	require.Len(t, reqs, 2, "sent once more, whatever the number of calls")
	assert.Equal(t, reqs[0].Header.Get("webhook-id"), reqs[1].Header.Get("webhook-id"), "the same webhook-id")
	assert.Equal(t, string(reqs[0].Body), string(reqs[1].Body), "the same body")
	dl, err = d.Deliveries().Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, dl.Status)
	assert.Equal(t, 2, dl.Attempts)
	assert.Len(t, dl.History, 2, "the resend is in its history")
}
