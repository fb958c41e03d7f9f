package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// drainDue runs the worker's due deliveries until none is left (bounded).
func drainDue(t *testing.T, d *Dispatcher) {
	t.Helper()
	for range 200 {
		n, err := d.ProcessDue(context.Background())
		require.NoError(t, err)
		if n == 0 {
			return
		}
	}
	t.Fatal("deliveries still due after 200 rounds")
}

// receivedEvents counts the requests of a receiver by event id.
func receivedEvents(t *testing.T, rc *receiver) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, r := range rc.requests() {
		var e struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &e))
		out[e.ID]++
	}
	return out
}

// TestReplayMissingSendsExactlyTheMissedEvents: events accepted before a webhook existed are replayed
// to it: exactly those of its tenant, of types it subscribes to, that its filter passes, accepted in
// the window and not delivered to it already, once each, whichever replica replays and however many
// calls run at once; a second replay schedules nothing.
func TestReplayMissingSendsExactlyTheMissedEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	opts := Options{ReplayIndex: true}
	d, clock := newClockedDispatcher(t, tr, opts)
	replica := newTestDispatcher(t, tr, opts)
	replica.now = clock.Now
	other := newReceiver(t) // a webhook of the tenant that exists all along, on another receiver
	_, err := d.Webhooks().Create(ctx, Webhook{URL: other.srv.URL, Events: []string{"user.*"}, Tenant: "acme"})
	require.NoError(t, err)
	send := func(tenant, id, typ string, amount int) {
		t.Helper()
		_, err := d.Dispatch(ctx, Event{Tenant: tenant, ID: id, Type: typ, Data: map[string]int{"amount": amount}})
		require.NoError(t, err)
	}
	send("acme", "before-window", "order.created", 50)
	clock.Advance(time.Hour)
	since := clock.Now()
	send("acme", "o1", "order.created", 12)
	send("acme", "o2-small", "order.created", 1) // the filter rejects it
	send("acme", "o3", "order.shipped", 20)
	send("acme", "u1-type", "user.created", 99) // not subscribed (the other webhook takes it)
	send("globex", "g1-tenant", "order.created", 99)
	send("", "n1-no-tenant", "order.created", 99)
	clock.Advance(time.Minute)

	rc := newReceiver(t)
	wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"order.*"}, Tenant: "acme",
		Filter: json.RawMessage(`{"data.amount": {"$gte": 10}}`)})
	require.NoError(t, err)
	send("acme", "o4-delivered", "order.created", 50) // delivered to it inline, not again by the replay
	require.Equal(t, map[string]int{"o4-delivered": 1}, receivedEvents(t, rc))

	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for i := range 4 {
		wg.Go(func() {
			n, err := []*Dispatcher{d, replica}[i%2].ReplayMissing(ctx, wh.ID, since)
			assert.NoError(t, err)
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	assert.Equal(t, 2, total, "o1 and o3 are missing, scheduled once in all")
	drainDue(t, d)
	assert.Equal(t, map[string]int{"o1": 1, "o3": 1, "o4-delivered": 1}, receivedEvents(t, rc))

	n, err := d.ReplayMissing(ctx, wh.ID, since)
	require.NoError(t, err)
	assert.Zero(t, n, "a second replay schedules nothing")
	drainDue(t, d)
	assert.Equal(t, map[string]int{"o1": 1, "o3": 1, "o4-delivered": 1}, receivedEvents(t, rc))

	// A webhook of no tenant gets the event of no tenant only.
	rc2 := newReceiver(t)
	wh2 := mustCreate(t, d, rc2, "*")
	n, err = d.ReplayMissing(ctx, wh2.ID, since)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	drainDue(t, d)
	assert.Equal(t, map[string]int{"n1-no-tenant": 1}, receivedEvents(t, rc2))
}

// TestReplayMissingPages: a window of more events than a page (many accepted in the same
// millisecond) is read in bounded pages, and following Next gets every event, once.
func TestReplayMissingPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{ReplayIndex: true})
	since := clock.Now()
	const events = ReplayPageSize + 150
	for i := range events {
		_, err := d.Enqueue(ctx, Event{ID: fmt.Sprintf("e%d", i), Type: "bulk.item"})
		require.NoError(t, err)
		if i%200 == 0 {
			clock.Advance(time.Millisecond) // most of a page shares one millisecond
		}
	}
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "bulk.*")
	total, pages, cursor := 0, 0, ""
	for pages < 20 {
		p, err := d.ReplayMissingPage(ctx, wh.ID, since, cursor)
		require.NoError(t, err)
		assert.LessOrEqual(t, p.Scheduled, ReplayPageSize)
		total, pages, cursor = total+p.Scheduled, pages+1, p.Next
		if cursor == "" {
			break
		}
	}
	assert.Equal(t, events, total)
	assert.Equal(t, 2, pages, "two pages for one page and a bit more")
	for i := range events {
		_, err := d.Deliveries().Find(ctx, wh.ID, fmt.Sprintf("e%d", i))
		require.NoError(t, err, "event e%d was replayed", i)
	}
	n, err := d.ReplayMissing(ctx, wh.ID, since)
	require.NoError(t, err)
	assert.Zero(t, n)
}

// TestReplayMissingPagesWithinOneMillisecond: more than two pages of one shard's index, nearly all
// accepted in one millisecond, are each replayed once by following Next (the cursor counts the
// entries of a millisecond it has read). The index is written as the claim script writes it.
func TestReplayMissingPagesWithinOneMillisecond(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{ReplayIndex: true})
	const events = 2*ReplayPageSize + 130
	ids := eventIDsInShard(t, "ms", 5, events)
	at := clock.Now().UnixMilli()
	pipe := tr.rdb.Pipeline()
	for i, id := range ids {
		body, err := d.events.Encode(Event{ID: id, Type: "bulk.item"})
		require.NoError(t, err)
		pipe.Set(ctx, d.keys.Event(5, id), rdb.StoredEvent(eventFingerprint("bulk.item", body), body), time.Hour)
		pipe.ZAdd(ctx, d.keys.Replay(5, ""), redis.Z{Score: float64(at + int64(min(i/20, 1))), Member: id})
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	clock.Advance(time.Second)
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "bulk.*")
	total, pages, cursor := 0, 0, ""
	for pages < 20 {
		p, err := d.ReplayMissingPage(ctx, wh.ID, time.UnixMilli(at), cursor)
		require.NoError(t, err)
		total, pages, cursor = total+p.Scheduled, pages+1, p.Next
		if cursor == "" {
			break
		}
	}
	assert.Equal(t, events, total)
	assert.Equal(t, 3, pages)
	for _, id := range ids {
		_, err := d.Deliveries().Find(ctx, wh.ID, id)
		require.NoError(t, err, "event %s was replayed", id)
	}
}

// TestReplayMissingErrors: without the index, for an unknown or disabled webhook, and for a cursor it
// did not issue.
func TestReplayMissingErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	off := newTestDispatcher(t, tr, Options{})
	on := newTestDispatcher(t, tr, Options{ReplayIndex: true})
	rc := newReceiver(t)
	wh := mustCreate(t, on, rc, "*")
	_, err := off.ReplayMissing(ctx, wh.ID, time.Time{})
	assert.ErrorIs(t, err, ErrReplayIndexOff)
	_, err = on.ReplayMissing(ctx, "wh_unknown", time.Time{})
	assert.ErrorIs(t, err, ErrNotFound)
	for _, c := range []string{"x", "1:2:3", "64:0:1:0", "0:5:4:0", "0:-1:1:0", "a:b:c:d"} {
		_, err = on.ReplayMissingPage(ctx, wh.ID, time.Time{}, c)
		assert.ErrorIs(t, err, ErrInvalidCursor, c)
	}
	wh.Disabled = true
	_, err = on.Webhooks().Update(ctx, *wh)
	require.NoError(t, err)
	_, err = on.ReplayMissing(ctx, wh.ID, time.Time{})
	assert.ErrorIs(t, err, ErrWebhookDisabled)
}

// TestReplayIndexIsPrunedWithRetention: a since older than Retention is clamped to it, and a write a
// retention later removes the older entries and keeps the key's TTL about a retention.
func TestReplayIndexIsPrunedWithRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{ReplayIndex: true})
	start := clock.Now()
	ids := eventIDsInShard(t, "p", 3, 2)
	_, err := d.Enqueue(ctx, Event{ID: ids[0], Type: "old.one"})
	require.NoError(t, err)
	key := d.keys.Replay(3, "")
	members, err := tr.rdb.ZRange(ctx, key, 0, -1).Result()
	require.NoError(t, err)
	require.Equal(t, []string{ids[0]}, members)
	ttl, err := tr.rdb.PTTL(ctx, key).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, d.opts.Retention-time.Minute, "the index key lives a retention")

	clock.Advance(d.opts.Retention + time.Minute)
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	n, err := d.ReplayMissing(ctx, wh.ID, start)
	require.NoError(t, err)
	assert.Zero(t, n, "since is clamped to Retention ago")

	_, err = d.Enqueue(ctx, Event{ID: ids[1], Type: "new.one"})
	require.NoError(t, err)
	members, err = tr.rdb.ZRange(ctx, key, 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, []string{ids[1]}, members, "the entry older than Retention is pruned")
	scores, err := tr.rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, []redis.Z{{Score: float64(clock.Now().UnixMilli()), Member: ids[1]}}, scores)
}
