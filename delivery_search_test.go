package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// searchAnswerOf is GET /deliveries's answer as a client reads it.
type searchAnswerOf struct {
	Deliveries []*Delivery `json:"deliveries"`
	NextCursor string      `json:"next_cursor"`
	Stopped    string      `json:"stopped"`
}

// searchOnce calls GET /deliveries on h with query (and a portal token when set).
func searchOnce(t *testing.T, h http.Handler, token string, query url.Values) searchAnswerOf {
	t.Helper()
	rec := call(h, "GET", "/deliveries?"+query.Encode(), token)
	require.Equal(t, http.StatusOK, rec.Code, "%s: %s", query.Encode(), rec.Body.String())
	var ans searchAnswerOf
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &ans))
	return ans
}

// TestSearchFollowsItsCursorUnderABudget: GET /deliveries without an id, on 100 webhooks' 2,500
// deliveries (5,000 with WEBHOOKS_LONG_TESTS; either is more than one search's SearchExamineBudget) of
// which 1 in 50 failed, costs at most 2,000 Redis commands the Dispatcher's client sends (commandCounter: a script is one)
// for any limit up to 500 (status=failed, and unfiltered); following next_cursor finds every failed
// delivery of the scope exactly once, newest first, in a bounded number of requests, each answer
// saying whether it stopped at its limit, at its budget or at the end; the portal's search reaches
// only its tenant's deliveries; a cursor it did not issue is refused. 16 shards keep the test quick on
// miniredis (whose Lua is slow): a round sends 2 commands per shard, and the budget holds at any count.
func TestSearchFollowsItsCursorUnderABudget(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	cc := &commandCounter{}
	c.AddHook(cc)
	d := newTestDispatcherOn(t, c, tr, Options{Shards: 16, RetrySchedule: []time.Duration{}, PortalKey: []byte(strings.Repeat("k", 32))})
	rc := newReceiver(t)
	ctx := context.Background()
	const hooks, types = 100, 10
	events := sized(250, 500) // each event to the 10 webhooks of its type: 2,500 or 5,000 deliveries
	for i := range hooks {
		_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{fmt.Sprintf("t.%d", i%types)}, Tenant: "acme"})
		require.NoError(t, err)
	}
	other, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"t.3"}, Tenant: "globex"})
	require.NoError(t, err)
	failed := map[string]bool{} // acme's failed deliveries
	var globexFailed []string
	for i := range events {
		typ := fmt.Sprintf("t.%d", i%types)
		evt := Event{ID: fmt.Sprintf("e%03d", i), Type: typ, Tenant: "acme"}
		if i%50 != 13 {
			_, err := d.Enqueue(ctx, evt) // pending: no worker runs
			require.NoError(t, err)
			continue
		}
		rc.status.Store(http.StatusInternalServerError) // no retries: failed at the first attempt
		res, err := d.Dispatch(ctx, evt)
		require.NoError(t, err)
		require.Len(t, res, types)
		for _, r := range res {
			failed[r.Delivery.ID] = true
		}
		if typ == "t.3" {
			res, err := d.Dispatch(ctx, Event{ID: evt.ID, Type: typ, Tenant: "globex"})
			require.NoError(t, err)
			require.Len(t, res, 1)
			globexFailed = append(globexFailed, res[0].Delivery.ID)
		}
		rc.status.Store(0)
	}
	require.Len(t, failed, events/50*types)
	require.NotEmpty(t, globexFailed)
	for _, id := range globexFailed {
		dl, err := d.Deliveries().Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, other.ID, dl.WebhookID)
	}
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)

	// follow searches with query until the end, and returns the deliveries found in order and the
	// answers' reasons to stop; it checks each request's commands and the answers' shape.
	follow := func(h http.Handler, token string, query url.Values, requests int) (found []*Delivery, stops []string) {
		t.Helper()
		for range requests {
			cc.take()
			ans := searchOnce(t, h, token, query)
			sent := cc.take()
			assert.LessOrEqual(t, sent, 2000, "Redis commands sent by one search (%s)", query.Encode())
			limit := DefaultPageLimit
			if l := query.Get("limit"); l != "" {
				_, _ = fmt.Sscan(l, &limit)
			}
			assert.LessOrEqual(t, len(ans.Deliveries), limit)
			found = append(found, ans.Deliveries...)
			stops = append(stops, ans.Stopped)
			if ans.NextCursor == "" {
				assert.Equal(t, SearchStoppedEnd, ans.Stopped, "no cursor: the search ran out")
				return found, stops
			}
			assert.Contains(t, []string{SearchStoppedLimit, SearchStoppedBudget}, ans.Stopped, "a cursor: it stopped early")
			if ans.Stopped == SearchStoppedLimit {
				assert.Len(t, ans.Deliveries, limit, "stopped at its limit with a full page")
			}
			query.Set("cursor", ans.NextCursor)
		}
		return found, stops
	}
	// exactlyOnceNewestFirst checks that found are want's deliveries, each once, newest first.
	exactlyOnceNewestFirst := func(name string, found []*Delivery, want map[string]bool) {
		t.Helper()
		seen := map[string]bool{}
		for i, dl := range found {
			assert.False(t, seen[dl.ID], "%s: %s found twice", name, dl.ID)
			seen[dl.ID] = true
			assert.Equal(t, StatusFailed, dl.Status, name)
			if i > 0 {
				assert.False(t, dl.CreatedAt.After(found[i-1].CreatedAt), "%s: newest first at %d", name, i)
			}
		}
		assert.Equal(t, want, seen, name)
	}
	all := map[string]bool{}
	for id := range failed {
		all[id] = true
	}
	for _, id := range globexFailed {
		all[id] = true
	}
	// At most as many requests as pages of matches, plus those a budget ends (2,500 or 5,000 entries to examine).
	bound := func(limit int) int { return (len(all)+limit-1)/limit + (hooks*events/types)/SearchExamineBudget + 2 }
	found, _ := follow(d.Handler(), "", url.Values{"status": {"failed"}, "limit": {"1"}}, 1)
	require.Len(t, found, 1, "limit 1: the newest failed delivery")
	assert.Equal(t, StatusFailed, found[0].Status)
	found, stops := follow(d.Handler(), "", url.Values{"status": {"failed"}, "limit": {"20"}}, bound(20))
	exactlyOnceNewestFirst("operator, limit 20", found, all)
	require.Equal(t, SearchStoppedEnd, stops[len(stops)-1], "operator: the search ends within %d requests", bound(20))
	assert.Contains(t, stops, SearchStoppedLimit)
	found, stops = follow(d.Portal(), token, url.Values{"status": {"failed"}, "limit": {"500"}}, bound(500))
	exactlyOnceNewestFirst("portal, limit 500", found, failed)
	require.Equal(t, SearchStoppedEnd, stops[len(stops)-1], "portal: the search ends within %d requests", bound(500))
	require.Greater(t, hooks*events/types, SearchExamineBudget)
	assert.Contains(t, stops, SearchStoppedBudget, "more deliveries to examine than one search's budget")

	cc.take()
	ans := searchOnce(t, d.Handler(), "", url.Values{"limit": {"500"}})
	assert.LessOrEqual(t, cc.take(), 2000, "Redis commands sent by an unfiltered search")
	assert.Len(t, ans.Deliveries, 500)
	assert.Equal(t, SearchStoppedLimit, ans.Stopped)
	assert.NotEmpty(t, ans.NextCursor)

	rec := call(d.Handler(), "GET", "/deliveries?cursor=not-a-cursor", "")
	assert.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
}

// TestSearchPagesExactly: following the cursor with any page size lists the same deliveries as one
// page holding them all, each once, newest first, ties of one millisecond (an event's deliveries to
// several webhooks) included; a page that holds the last delivery ends the search (no cursor), and a
// window (from, to) is paged the same way; a delivery sent again (Redeliver) is listed once, by when
// it was sent again. The same for the operator's search (each webhook's indexes) and a portal's (its
// tenant's indexes).
func TestSearchPagesExactly(t *testing.T) {
	t.Parallel()
	for _, tenant := range []string{"", "acme"} {
		t.Run("tenant="+tenant, func(t *testing.T) {
			t.Parallel()
			tr := newTestRedis(t)
			d, clock := newClockedDispatcher(t, tr, Options{Shards: 8, RetrySchedule: []time.Duration{}, PortalKey: []byte(strings.Repeat("k", 32))})
			h, token := d.Handler(), ""
			if tenant != "" {
				var err error
				h = d.Portal()
				token, err = d.PortalToken(tenant, time.Hour)
				require.NoError(t, err)
			}
			rc := newReceiver(t)
			ctx := context.Background()
			for range 3 {
				_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: tenant})
				require.NoError(t, err)
			}
			_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "other"}) // out of a portal's scope
			require.NoError(t, err)
			t0 := clock.Now()
			rc.status.Store(http.StatusInternalServerError) // the first event fails (no retries), to be sent again
			res, err := d.Dispatch(ctx, Event{ID: "e0", Type: "a.b", Tenant: tenant})
			require.NoError(t, err)
			rc.status.Store(0)
			clock.Advance(time.Minute)
			for i := 1; i < 4; i++ {
				_, err := d.Enqueue(ctx, Event{ID: fmt.Sprintf("e%d", i), Type: "a.b", Tenant: tenant}) // 3 deliveries in one millisecond
				require.NoError(t, err)
				clock.Advance(time.Minute)
			}
			var again string
			for _, r := range res {
				if r.Delivery != nil && r.Delivery.Status == StatusFailed {
					again = r.Delivery.ID
				}
			}
			require.NotEmpty(t, again, "a delivery of e0 failed")
			_, err = d.Redeliver(ctx, again)
			require.NoError(t, err)
			ids := func(dls []*Delivery) []string {
				out := []string{}
				for _, dl := range dls {
					out = append(out, dl.ID)
				}
				return out
			}
			all := searchOnce(t, h, token, url.Values{"limit": {"500"}})
			require.Len(t, all.Deliveries, 12)
			assert.Equal(t, again, all.Deliveries[0].ID, "the delivery sent again is listed first")
			assert.Len(t, slices.Compact(slices.Sorted(slices.Values(ids(all.Deliveries)))), 12, "each once")
			// A delivery has another place in its tenant's index than in its webhook's: a cursor of one
			// kind of search is refused by the other.
			if tenant != "" {
				portalNext := searchOnce(t, h, token, url.Values{"limit": {"1"}}).NextCursor
				operatorNext := searchOnce(t, d.Handler(), "", url.Values{"limit": {"1"}}).NextCursor
				require.NotEmpty(t, portalNext)
				require.NotEmpty(t, operatorNext)
				rec := call(d.Handler(), "GET", "/deliveries?limit=1&cursor="+portalNext, "")
				assert.Equal(t, http.StatusBadRequest, rec.Code, "a portal's cursor in the operator's search: %s", rec.Body.String())
				rec = call(h, "GET", "/deliveries?limit=1&cursor="+operatorNext, token)
				assert.Equal(t, http.StatusBadRequest, rec.Code, "the operator's cursor in a portal's search: %s", rec.Body.String())
			}
			window := url.Values{"from": {t0.Add(90 * time.Second).UTC().Format(time.RFC3339Nano)}, "to": {t0.Add(210 * time.Second).UTC().Format(time.RFC3339Nano)}}
			for _, tc := range []struct {
				name  string
				query url.Values
				n     int
			}{{"all", url.Values{}, 12}, {"a window", window, 6}} {
				all := searchOnce(t, h, token, url.Values{"limit": {"500"}, "from": tc.query["from"], "to": tc.query["to"]})
				require.Len(t, all.Deliveries, tc.n, tc.name)
				assert.Equal(t, SearchStoppedEnd, all.Stopped, tc.name)
				if tc.name == "all" {
					for i := 2; i < len(all.Deliveries); i++ { // the first was sent again: listed by then, created before
						assert.False(t, all.Deliveries[i].CreatedAt.After(all.Deliveries[i-1].CreatedAt), "%s: newest first", tc.name)
					}
				}
				for limit := 1; limit <= tc.n+1; limit++ {
					q := url.Values{"limit": {fmt.Sprint(limit)}, "from": tc.query["from"], "to": tc.query["to"]}
					var got []*Delivery
					for range tc.n + 1 {
						ans := searchOnce(t, h, token, q)
						assert.LessOrEqual(t, len(ans.Deliveries), limit)
						got = append(got, ans.Deliveries...)
						if ans.NextCursor == "" {
							assert.Equal(t, SearchStoppedEnd, ans.Stopped)
							break
						}
						q.Set("cursor", ans.NextCursor)
					}
					assert.Equal(t, ids(all.Deliveries), ids(got), "%s, limit %d", tc.name, limit)
					if limit >= tc.n {
						assert.NotContains(t, q, "cursor", "%s, limit %d: one page ends the search", tc.name, limit)
					}
				}
			}
		})
	}
}

// TestSearchServerCostUnderBudget: on a redis-server of the test's own (no other traffic), one GET
// /deliveries costs the server at most 2,000 commands as INFO commandstats counts them (each command
// a script calls included) for limit 500, status=failed and unfiltered: a portal's search of a tenant
// with 100 webhooks × 300 deliveries (64 shards: 6,400 webhook indexes, which the tenant's indexes
// spare it), and the operator's of 20 webhooks × 300; following next_cursor makes progress at every
// request and finds every failed delivery of the scope exactly once, newest first. It runs in the
// real-Redis pass only.
func TestSearchServerCostUnderBudget(t *testing.T) {
	addr, admin := ownRedis(t)
	t.Parallel()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	// served is the server's count of commands run, INFO's own excluded.
	served := func() int {
		info, err := admin.Info(ctx, "commandstats").Result()
		require.NoError(t, err)
		n := 0
		for line := range strings.Lines(info) {
			name, stats, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
			if !ok || name == "cmdstat_info" {
				continue
			}
			calls, _, _ := strings.Cut(stats, ",")
			n += int(atoiOr(calls))
		}
		return n
	}
	for _, tc := range []struct {
		name, tenant string
		hooks        int
	}{
		{"portal", "acme", 100},
		{"operator", "", 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(rdb, Options{KeyPrefix: "cost-" + tc.name, AllowPrivateNetworks: true, RetrySchedule: []time.Duration{},
				PortalKey: []byte(strings.Repeat("k", 32)), MaxWebhooksPerTenant: tc.hooks})
			require.NoError(t, err)
			h, token := d.Handler(), ""
			if tc.tenant != "" {
				h = d.Portal()
				token, err = d.PortalToken(tc.tenant, time.Hour)
				require.NoError(t, err)
			}
			rc := newReceiver(t)
			const events = 300
			for range tc.hooks {
				_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"t.*"}, Tenant: tc.tenant})
				require.NoError(t, err)
			}
			failed := map[string]bool{}
			for i := range events {
				evt := Event{ID: fmt.Sprintf("e%03d", i), Type: "t.x", Tenant: tc.tenant}
				if i%30 != 7 {
					_, err := d.Enqueue(ctx, evt) // pending: no worker runs
					require.NoError(t, err)
					continue
				}
				rc.status.Store(http.StatusInternalServerError) // no retries: failed at the first attempt
				res, err := d.Dispatch(ctx, evt)
				require.NoError(t, err)
				for _, r := range res {
					failed[r.Delivery.ID] = true
				}
				rc.status.Store(0)
			}
			for id := range failed { // a Dispatch attempts some of its deliveries at once, and leaves the others to the worker
				dl, err := d.Deliveries().Get(ctx, id)
				require.NoError(t, err)
				if dl.Status != StatusFailed {
					delete(failed, id)
				}
			}
			require.NotEmpty(t, failed)
			for _, query := range []url.Values{{"limit": {"500"}, "status": {"failed"}}, {"limit": {"500"}}} {
				var found []*Delivery
				last := ""
				for req := 0; ; req++ {
					require.Less(t, req, 200, "the search ends (%s)", query.Encode())
					before := served()
					ans := searchOnce(t, h, token, query)
					cost := served() - before
					assert.LessOrEqual(t, cost, 2000, "commands the server ran for one search (%s, request %d)", query.Encode(), req)
					t.Logf("%s: request %d cost the server %d commands, found %d, stopped %s", query.Encode(), req, cost, len(ans.Deliveries), ans.Stopped)
					found = append(found, ans.Deliveries...)
					if ans.NextCursor == "" {
						break
					}
					require.NotEqual(t, last, ans.NextCursor, "repeating with the cursor makes progress")
					last = ans.NextCursor
					query.Set("cursor", ans.NextCursor)
				}
				if query.Get("status") == "failed" {
					require.Len(t, found, len(failed))
					seen := map[string]bool{}
					for i, dl := range found {
						assert.True(t, failed[dl.ID], "found %s, not a failed delivery", dl.ID)
						assert.False(t, seen[dl.ID], "found %s twice", dl.ID)
						seen[dl.ID] = true
						if i > 0 {
							assert.False(t, found[i-1].CreatedAt.Before(dl.CreatedAt), "newest first")
						}
					}
				} else {
					assert.Len(t, found, tc.hooks*events)
				}
			}
		})
	}
}

// TestSearchScriptKeepsItsReadBudget: rdb.Search on streams whose entries share stream ids (and one
// stream newer than the others, which it reads on and on), given one read more than its streams, makes at most that many reads per call, and walked with its own
// "(last" cursor returns every entry exactly once, newest first, a stream id never split between calls,
// and the cursor moving on at every call.
func TestSearchScriptKeepsItsReadBudget(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	ctx := context.Background()
	const streams = 5
	keys := make([]string, streams)
	want := map[string]int{} // "stream id/key index" -> 1
	for i := range streams {
		keys[i] = "{" + tr.prefix + ":s0}:list:w" + fmt.Sprint(i)
		first := 900 // the first stream's entries are all newer than the others': it is read on and on
		if i == 0 {
			first = 1000
		}
		for ms := first; ms < first+40; ms++ {
			if i > 0 && (ms+i)%3 == 0 { // not every stream has every id
				continue
			}
			id := fmt.Sprintf("%d-0", ms)
			require.NoError(t, c.XAdd(ctx, &redis.XAddArgs{Stream: keys[i], ID: id, Values: []any{"d", "h", "x", "1"}}).Err())
			want[fmt.Sprintf("%s/%d", id, i+1)] = 1
		}
	}
	got := map[string]int{}
	from, lastMs := "+", int64(1<<62)
	for call := 0; ; call++ {
		require.Less(t, call, 200, "the walk ends")
		reply, err := rdb.Search.Run(ctx, c, keys, from, 10, streams+1).Slice()
		require.NoError(t, err)
		more, ms, seq, calls := reply[0].(int64), reply[1].(int64), reply[2].(int64), reply[3].(int64)
		assert.LessOrEqual(t, calls, int64(streams+1), "reads of one call")
		ids, prev := map[string]bool{}, int64(1<<62)
		for j := 4; j < len(reply); j += 4 {
			got[fmt.Sprintf("%s/%d", reply[j+1], reply[j])]++
			ids[reply[j+1].(string)] = true
			var at int64
			_, _ = fmt.Sscanf(reply[j+1].(string), "%d-", &at)
			assert.LessOrEqual(t, at, prev, "newest first")
			prev = at
		}
		if more == 0 {
			break
		}
		require.Less(t, ms, lastMs, "the cursor moves on")
		lastMs = ms
		require.True(t, ids[fmt.Sprintf("%d-%d", ms, seq)], "the last stream id is among the entries")
		from = fmt.Sprintf("(%d-%d", ms, seq)
	}
	assert.Equal(t, want, got, "every entry once")
}

// TestTestSendCutsNoIndexShort: a test send's record is kept an hour, but the indexes it is written to
// keep Options.Retention: a tenant's deliveries made two hours before a test send are still found by
// the portal's search after it, and the tenant's index streams keep a TTL of at least the retention.
func TestTestSendCutsNoIndexShort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{Shards: 4, PortalKey: []byte(strings.Repeat("k", 32))})
	rc := newReceiver(t)
	w, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "acme"})
	require.NoError(t, err)
	for i := range 8 {
		_, err := d.Enqueue(ctx, Event{ID: fmt.Sprintf("e%d", i), Type: "a.b", Tenant: "acme"})
		require.NoError(t, err)
	}
	clock.Advance(2 * time.Hour)
	_, err = d.SendTest(ctx, w.ID)
	require.NoError(t, err)
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	ans := searchOnce(t, d.Portal(), token, url.Values{"limit": {"500"}})
	assert.Len(t, ans.Deliveries, 9, "the 8 deliveries and the test send")
	for s := range d.keys.Shards {
		key := d.keys.TenantIndex(s, "acme")
		if n, err := tr.rdb.Exists(ctx, key).Result(); err == nil && n == 1 {
			ttl, err := tr.rdb.PTTL(ctx, key).Result()
			require.NoError(t, err)
			assert.GreaterOrEqual(t, ttl, d.opts.Retention-2*time.Hour, "%s keeps the retention", key)
		}
	}
}

// TestPortalSearchReachesEveryWebhookOfItsTenant: a portal's search reads its tenant's index, so it
// finds the deliveries of every webhook of the tenant, beyond the MaxSearchWebhooks the operator's
// search (each webhook's index) examines.
func TestPortalSearchReachesEveryWebhookOfItsTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	hooks := MaxSearchWebhooks + 1
	d := newTestDispatcher(t, tr, Options{Shards: 4, MaxWebhooksPerTenant: hooks, PortalKey: []byte(strings.Repeat("k", 32))})
	rc := newReceiver(t)
	for range hooks {
		_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "acme"})
		require.NoError(t, err)
	}
	res, err := d.Enqueue(ctx, Event{ID: "e1", Type: "a.b", Tenant: "acme"})
	require.NoError(t, err)
	require.Len(t, res, hooks)
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	assert.Len(t, searchOnce(t, d.Portal(), token, url.Values{"limit": {"500"}}).Deliveries, hooks, "the portal's search")
	assert.Len(t, searchOnce(t, d.Handler(), "", url.Values{"limit": {"500"}}).Deliveries, MaxSearchWebhooks, "the operator's search")
}
