package webhooks

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks/internal/index"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pageDispatch dispatches n events of type page.test with ids prefix-000.. and returns the delivery id of
// each for webhook wh. The clock moves 1ms after every tieEvery events (never when 0: all tie).
func pageDispatch(t testing.TB, d *Dispatcher, clock *testClock, wh *Webhook, prefix string, n, tieEvery int) []string {
	t.Helper()
	ids := make([]string, 0, n)
	for i := range n {
		res, err := d.Dispatch(context.Background(), Event{Type: "page.test", ID: fmt.Sprintf("%s-%03d", prefix, i)})
		require.NoError(t, err)
		for _, r := range res {
			require.NoError(t, r.Err)
			if r.WebhookID == wh.ID {
				ids = append(ids, r.Delivery.ID)
			}
		}
		if tieEvery > 0 && (i+1)%tieEvery == 0 {
			clock.Advance(time.Millisecond)
		}
	}
	require.Len(t, ids, n)
	return ids
}

// failPendingDue moves the clock past the one-step retry schedule and runs worker passes until nothing is due:
// every pending delivery whose receiver still fails becomes failed.
func failPendingDue(t testing.TB, d *Dispatcher, clock *testClock) {
	t.Helper()
	clock.Advance(2 * time.Minute)
	for range 100 {
		n, err := d.ProcessDue(context.Background())
		require.NoError(t, err)
		if n == 0 {
			return
		}
	}
	t.Fatal("worker passes did not settle")
}

// failingSetup is the setup of the tests that need failed deliveries: a receiver answering 500, a
// dispatcher on a test clock with a one-step retry schedule (one minute), and a webhook on the
// receiver subscribed to every event type.
type failingSetup struct {
	tr    *testRedis
	d     *Dispatcher
	clock *testClock
	rc    *receiver
	wh    *Webhook
}

func newFailingSetup(t testing.TB) *failingSetup {
	t.Helper()
	f := &failingSetup{tr: newTestRedis(t), rc: newReceiver(t)}
	f.d, f.clock = newClockedDispatcher(t, f.tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	f.rc.status.Store(http.StatusInternalServerError)
	f.wh = mustCreate(t, f.d, f.rc, "*")
	return f
}

// failed dispatches n events as pageDispatch does, then runs the worker past the retry (failPendingDue)
// so that they are failed; it returns the webhook's deliveries of them, in dispatch order.
func (f *failingSetup) failed(t testing.TB, prefix string, n, tieEvery int) []string {
	t.Helper()
	ids := pageDispatch(t, f.d, f.clock, f.wh, prefix, n, tieEvery)
	failPendingDue(t, f.d, f.clock)
	return ids
}

// pageCollect follows a listing to its end (at most 1000 pages) and returns the delivery ids in order and
// the number of pages; between runs after every page but the last.
func pageCollect(t testing.TB, fetch func(cursor string) (*DeliveryPage, error), between func()) ([]string, int) {
	t.Helper()
	var ids []string
	cursor := ""
	for pages := 1; pages <= 1000; pages++ {
		page, err := fetch(cursor)
		require.NoError(t, err)
		for _, dl := range page.Deliveries {
			ids = append(ids, dl.ID)
		}
		if page.NextCursor == "" {
			return ids, pages
		}
		require.NotEqual(t, cursor, page.NextCursor, "a cursor must move")
		cursor = page.NextCursor
		if between != nil {
			between()
		}
	}
	t.Fatal("listing did not end")
	return nil, 0
}

// listingOrder sorts delivery ids the way a listing orders them, by their index entries: stream id
// (ms, seq), then delivery id, all descending. It checks on the way that each id is indexed once, at the
// millisecond it was created (the test never redelivers them).
func listingOrder(t testing.TB, d *Dispatcher, ids []string) []string {
	t.Helper()
	ctx := context.Background()
	positions := map[string]index.Pos{}
	for _, id := range ids {
		s, err := shardOfDelivery(id)
		require.NoError(t, err)
		dl, err := d.Deliveries().Get(ctx, id)
		require.NoError(t, err)
		msgs, err := d.rdb.XRange(ctx, d.keys.Index(s, dl.WebhookID), "-", "+").Result()
		require.NoError(t, err)
		for _, m := range msgs {
			if e, ok := index.EntryOf(s, m); ok && e.ID == id {
				require.NotContains(t, positions, id, "indexed once")
				positions[id] = e.Pos
				assert.Equal(t, dl.CreatedAt.UnixMilli(), e.MS, "indexed at its creation")
			}
		}
		require.Contains(t, positions, id, "indexed")
	}
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b string) int {
		if positions[a].Before(positions[b]) {
			return -1
		}
		return 1
	})
	return out
}

// TestPageNeitherSkipsNorRepeats lists 60 deliveries page by page while new deliveries are written
// between pages: the listing holds each of the 60 exactly once, in order, and none of the new ones.
func TestPageNeitherSkipsNorRepeats(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		tieEvery int // deliveries per millisecond; 0: all in one
		limit    int
	}{
		{"one per ms, limit 7", 1, 7},
		{"three per ms, limit 7", 3, 7},
		{"all tied, limit 7", 0, 7},
		{"all tied, limit 1", 0, 1},
		{"three per ms, limit 2", 3, 2},
		{"one per ms, limit 60", 1, 60},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case on its own Redis, clock and Dispatcher
			ctx := context.Background()
			tr := newTestRedis(t)
			clock := newTestClock()
			d := newTestDispatcher(t, tr, Options{})
			d.now = clock.Now
			rc := newReceiver(t)
			wh := mustCreate(t, d, rc, "page.*")
			other := mustCreate(t, d, rc, "*") // its deliveries share the shards, not the listing
			original := pageDispatch(t, d, clock, wh, "orig", 60, tc.tieEvery)
			clock.Advance(time.Millisecond)

			extra := 0
			got, pages := pageCollect(t, func(cursor string) (*DeliveryPage, error) {
				return d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{Limit: tc.limit, Cursor: cursor})
			}, func() {
				pageDispatch(t, d, clock, wh, fmt.Sprintf("new%d", extra), 2, 1)
				extra++
			})
			assert.Equal(t, listingOrder(t, d, original), got, "each original once, newest first, no new one")
			assert.Equal(t, (60+tc.limit-1)/tc.limit, pages)

			fresh, err := d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{Limit: MaxPageLimit})
			require.NoError(t, err)
			assert.Len(t, fresh.Deliveries, 60+2*extra, "a fresh listing shows the new ones")
			assert.Empty(t, fresh.NextCursor)
			otherPage, err := d.Deliveries().Page(ctx, other.ID, DeliveryQuery{Limit: MaxPageLimit})
			require.NoError(t, err)
			assert.Len(t, otherPage.Deliveries, 60+2*extra)
		})
	}
}

// scriptedReceiver answers each request by the event id in its body.
func scriptedReceiver(t testing.TB, answer func(eventID string, w http.ResponseWriter)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ID string `json:"id"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		answer(body.ID, w)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestPageStatusFilter lists interleaved failed, successful and pending deliveries by status.
func TestPageStatusFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	srv := scriptedReceiver(t, func(id string, w http.ResponseWriter) {
		switch {
		case strings.HasPrefix(id, "f"): // fails: pending, then failed after the worker's retry
			w.WriteHeader(http.StatusInternalServerError)
		case strings.HasPrefix(id, "p"): // fails with a long Retry-After: still pending after the retry pass
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	wh, err := d.Webhooks().Create(ctx, Webhook{URL: srv.URL, Events: []string{"*"}})
	require.NoError(t, err)
	want := map[Status][]string{}
	for i := range 45 {
		kind := []string{"f", "s", "p", "s", "s"}[i%5] // failures are sparse among successes
		res, err := d.Dispatch(ctx, Event{Type: "filter.test", ID: fmt.Sprintf("%s%02d", kind, i)})
		require.NoError(t, err)
		status := map[string]Status{"f": StatusFailed, "s": StatusSuccess, "p": StatusPending}[kind]
		want[status] = append(want[status], res[0].Delivery.ID)
		clock.Advance(time.Millisecond)
	}
	failPendingDue(t, d, clock)

	for _, status := range []Status{StatusFailed, StatusSuccess, StatusPending, ""} {
		for _, limit := range []int{1, 4, 50} {
			t.Run(fmt.Sprintf("%s/limit %d", status, limit), func(t *testing.T) {
				got, _ := pageCollect(t, func(cursor string) (*DeliveryPage, error) {
					page, err := d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{Status: status, Limit: limit, Cursor: cursor})
					if err == nil {
						assert.LessOrEqual(t, len(page.Deliveries), limit)
						for _, dl := range page.Deliveries {
							if status != "" {
								assert.Equal(t, status, dl.Status)
							}
						}
					}
					return page, err
				}, nil)
				expect := want[status]
				if status == "" {
					expect = slices.Concat(want[StatusFailed], want[StatusSuccess], want[StatusPending])
				}
				assert.Equal(t, listingOrder(t, d, expect), got)
			})
		}
	}
}

// TestPageBoundedScan: a filtered page reads a bounded number of index batches. Behind more index
// entries whose records are gone than one filtered page may examine (MaxPageRounds × MinFilteredBatch,
// 2,000, and 100 more), the one failed delivery is found by following cursors, once; so is it by an
// unfiltered listing, whose pages of 20 examine at most MaxPageRounds × 21 entries each (a walk of 5
// pages or more: with limit 3 it took 27 pages, 6 s of miniredis, for the same bound).
func TestPageBoundedScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFailingSetup(t)
	tr, d, wh := f.tr, f.d, f.wh
	ids := f.failed(t, "real", 1, 1)
	real, err := d.Deliveries().Get(ctx, ids[0])
	require.NoError(t, err)

	const ghosts = index.MaxPageRounds*index.MinFilteredBatch + 100
	pipe := tr.rdb.Pipeline()
	for i := range ghosts {
		s := i % shardCount
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: d.keys.Index(s, wh.ID),
			ID:     fmt.Sprintf("%d-*", real.CreatedAt.UnixMilli()+1+int64(i/7)),
			Values: []any{"d", rdb.IndexedHash(fmt.Sprintf("dlv_%02x%024x", s, i)), "x", real.ExpiresAt.UnixMilli()}})
	}
	_, err = pipe.Exec(ctx)
	require.NoError(t, err)

	first, err := d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{Status: StatusFailed, Limit: 1})
	require.NoError(t, err)
	assert.Empty(t, first.Deliveries, "the bound ends the first page before the real entry")
	assert.NotEmpty(t, first.NextCursor)

	for _, q := range []DeliveryQuery{{Status: StatusFailed, Limit: 1}, {Limit: 20}} {
		got, pages := pageCollect(t, func(cursor string) (*DeliveryPage, error) {
			q.Cursor = cursor
			return d.Deliveries().Page(ctx, wh.ID, q)
		}, nil)
		assert.Equal(t, []string{real.ID}, got, "query %+v", q)
		assert.Greater(t, pages, 1)
	}
}

// TestPageSkipsExpiredEntries: an index entry whose expiry has passed is not listed, even while its
// record is still there.
func TestPageSkipsExpiredEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	ids := pageDispatch(t, d, clock, wh, "exp", 5, 1)
	old := ids[2]
	shard, err := shardOfDelivery(old)
	require.NoError(t, err)
	key := d.keys.Index(shard, wh.ID)
	msgs, err := tr.rdb.XRange(ctx, key, "-", "+").Result()
	require.NoError(t, err)
	for _, m := range msgs { // index it again, as expired
		if e, _ := index.EntryOf(shard, m); e.ID == old {
			require.NoError(t, tr.rdb.XDel(ctx, key, m.ID).Err())
			require.NoError(t, tr.rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "*",
				Values: []any{"d", rdb.IndexedHash(old), "x", time.Now().Add(-time.Second).UnixMilli()}}).Err())
		}
	}

	page, err := d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{})
	require.NoError(t, err)
	got := make([]string, 0, len(page.Deliveries))
	for _, dl := range page.Deliveries {
		got = append(got, dl.ID)
	}
	assert.Equal(t, []string{ids[4], ids[3], ids[1], ids[0]}, got)
	assert.Empty(t, page.NextCursor)
}

// TestPageRedeliveredMovesToTop: Redeliver re-indexes a delivery, so a fresh listing shows it first,
// and not again at its old place.
func TestPageRedeliveredMovesToTop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFailingSetup(t)
	d, wh := f.d, f.wh
	ids := f.failed(t, "top", 5, 1)
	_, err := d.Redeliver(ctx, ids[0])
	require.NoError(t, err)
	page, err := d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{Limit: 2})
	require.NoError(t, err)
	require.Len(t, page.Deliveries, 2)
	assert.Equal(t, ids[0], page.Deliveries[0].ID)
	assert.Equal(t, ids[4], page.Deliveries[1].ID)
	assert.NotEmpty(t, page.NextCursor)
	all, _ := pageCollect(t, func(cursor string) (*DeliveryPage, error) {
		return d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{Limit: 2, Cursor: cursor})
	}, nil)
	assert.Equal(t, []string{ids[0], ids[4], ids[3], ids[2], ids[1]}, all, "listed once, at its new place only")
}

// TestPageLimits: 0 means 50, more than 500 means 500, negative is invalid.
func TestPageLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	pageDispatch(t, d, clock, wh, "lim", 60, 1)
	cases := []struct {
		limit, want int
		more        bool
	}{{0, 50, true}, {59, 59, true}, {60, 60, false}, {1000, 60, false}}
	for _, tc := range cases {
		page, err := d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{Limit: tc.limit})
		require.NoError(t, err)
		assert.Len(t, page.Deliveries, tc.want, "limit %d", tc.limit)
		assert.Equal(t, tc.more, page.NextCursor != "", "limit %d", tc.limit)
	}
	_, err := d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{Limit: -1})
	require.ErrorIs(t, err, ErrInvalidQuery)
}

// TestPageRejectsBadInput: unknown webhooks, statuses and cursors.
func TestPageRejectsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")

	_, err := d.Deliveries().Page(ctx, "wh_nope", DeliveryQuery{})
	require.ErrorIs(t, err, ErrNotFound)
	_, err = d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{Status: "gone"})
	require.ErrorIs(t, err, ErrInvalidQuery)
	require.NotErrorIs(t, err, ErrInvalidCursor)

	raw := func(version byte, ms int64, id string) string {
		b := append([]byte{version}, binary.BigEndian.AppendUint64(nil, uint64(ms))...)
		b = binary.BigEndian.AppendUint64(b, 0)
		return base64.RawURLEncoding.EncodeToString(append(b, id...))
	}
	bad := map[string]string{
		"not base64":   "!!!",
		"padded":       base64.URLEncoding.EncodeToString([]byte("\x01abcdefghijklm")),
		"std alphabet": "+/+/+/+/+/+/+/",
		"too short":    base64.RawURLEncoding.EncodeToString([]byte{1, 2, 3}),
		"old version":  raw(1, 5, "dlv_x"),
		"negative ms":  raw(2, -1, "dlv_x"),
		"bad utf-8":    raw(2, 5, "\xff\xfe"),
		"too long":     raw(2, 5, strings.Repeat("a", 300)),
	}
	for name, cursor := range bad {
		_, err := d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{Cursor: cursor})
		require.ErrorIs(t, err, ErrInvalidCursor, name)
		require.ErrorIs(t, err, ErrInvalidQuery, name)
	}
	// A well-formed cursor far below everything is just an empty last page.
	page, err := d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{Cursor: raw(2, 5, "dlv_x")})
	require.NoError(t, err)
	assert.Empty(t, page.Deliveries)
	assert.Empty(t, page.NextCursor)
}

// TestIndexTrimsOldEntries: a webhook's per-shard index drops entries older than a retention when it is
// next written (whole blocks of entries at a time on a real Redis), and lives as long as its newest one.
func TestIndexTrimsOldEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{Retention: 2 * time.Hour, RetrySchedule: []time.Duration{time.Minute}})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	ids := eventIDsInShard(t, "trim", 3, 250)
	for _, id := range ids[:249] { // claimed as Dispatch claims them, without the attempts
		_, err := d.Enqueue(ctx, Event{Type: "trim.test", ID: id})
		require.NoError(t, err)
	}
	key := d.keys.Index(3, wh.ID)
	require.EqualValues(t, 249, tr.rdb.XLen(ctx, key).Val())

	clock.Advance(3 * time.Hour)
	_, err := d.Dispatch(ctx, Event{Type: "trim.test", ID: ids[249]})
	require.NoError(t, err)
	assert.Less(t, tr.rdb.XLen(ctx, key).Val(), int64(100), "entries older than a retention are trimmed")
	ttl := tr.rdb.PTTL(ctx, key).Val()
	assert.True(t, ttl > 2*time.Hour-5*time.Second && ttl <= 2*time.Hour+2*time.Hour/64, "TTL %s: a retention, up to 1/64 more", ttl)
	page, err := d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{Limit: 1})
	require.NoError(t, err)
	require.Len(t, page.Deliveries, 1)
	assert.Equal(t, ids[249], page.Deliveries[0].EventID)
}

// TestIndexToleratesAClockBehind: a replica whose clock is behind the newest index entry still indexes
// its deliveries, after that entry (stream ids only grow), and the listing shows them first.
func TestIndexToleratesAClockBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	ahead, aheadClock := newClockedDispatcher(t, tr, Options{})
	behind := newTestDispatcherOn(t, tr.rdb, tr, Options{})
	aheadClock.Advance(time.Hour)
	rc := newReceiver(t)
	wh := mustCreate(t, ahead, rc, "*")
	ids := eventIDsInShard(t, "skew", 5, 2)
	for i, d := range []*Dispatcher{ahead, behind} {
		res, err := d.Dispatch(ctx, Event{Type: "skew.test", ID: ids[i]})
		require.NoError(t, err)
		require.NoError(t, res[0].Err)
	}
	page, err := ahead.Deliveries().Page(ctx, wh.ID, DeliveryQuery{})
	require.NoError(t, err)
	require.Len(t, page.Deliveries, 2)
	assert.Equal(t, []string{ids[1], ids[0]}, []string{page.Deliveries[0].EventID, page.Deliveries[1].EventID})
}
