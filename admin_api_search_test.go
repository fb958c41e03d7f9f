package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// searchIDs calls GET /deliveries on h (with a portal token when set) and returns the ids found.
func searchIDs(t *testing.T, h http.Handler, token, query string) []string {
	t.Helper()
	req := httptest.NewRequest("GET", "/deliveries"+query, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, "%s: %s", query, rec.Body.String())
	var page struct{ Deliveries []*Delivery }
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page))
	ids := []string{}
	for _, dl := range page.Deliveries {
		ids = append(ids, dl.ID)
	}
	return ids
}

// TestSearchDeliveries: GET /deliveries finds a delivery by its id and an event's deliveries by the
// event id, across webhooks, filters by status and event type, newest first; in the portal it finds
// only the token's tenant's (another tenant's id finds nothing), and the portal has no backlog.
func TestSearchDeliveries(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	rc := newReceiver(t)
	ctx := context.Background()
	mk := func(tenant, events string) *Webhook {
		wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{events}, Tenant: tenant})
		require.NoError(t, err)
		return wh
	}
	a1, a2, g := mk("acme", "order.*"), mk("acme", "*"), mk("globex", "*")
	send := func(tenant, id, typ string) {
		_, err := d.Dispatch(ctx, Event{Tenant: tenant, ID: id, Type: typ})
		require.NoError(t, err)
	}
	send("acme", "ev1", "order.created")
	time.Sleep(2 * time.Millisecond) // distinct creation times: newest first is checkable
	send("acme", "ev2", "invoice.paid")
	send("globex", "ev1", "order.created")
	find := func(wh *Webhook, ev string) string {
		dl, err := d.Deliveries().Find(ctx, wh.ID, ev)
		require.NoError(t, err)
		return dl.ID
	}
	a1ev1, a2ev1, a2ev2, gev1 := find(a1, "ev1"), find(a2, "ev1"), find(a2, "ev2"), find(g, "ev1")
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	op, portal := d.Handler(), d.Portal()

	assert.Equal(t, []string{a2ev1}, searchIDs(t, op, "", "?id="+a2ev1))
	assert.ElementsMatch(t, []string{a1ev1, a2ev1, gev1}, searchIDs(t, op, "", "?id=ev1"), "an event id: its delivery to every webhook, every tenant's")
	assert.Equal(t, gev1, searchIDs(t, op, "", "")[0], "newest first")
	assert.Equal(t, a2ev2, searchIDs(t, portal, token, "")[0], "newest first")
	assert.ElementsMatch(t, []string{a2ev2}, searchIDs(t, op, "", "?event_type=invoice.paid"))
	assert.ElementsMatch(t, []string{a1ev1, a2ev1, a2ev2, gev1}, searchIDs(t, op, "", "?status=success"))
	assert.Empty(t, searchIDs(t, op, "", "?status=failed"))
	assert.Len(t, searchIDs(t, op, "", "?limit=1"), 1)

	assert.ElementsMatch(t, []string{a1ev1, a2ev1}, searchIDs(t, portal, token, "?id=ev1"), "the portal: its tenant's only")
	assert.ElementsMatch(t, []string{a1ev1, a2ev1, a2ev2}, searchIDs(t, portal, token, ""))
	assert.Empty(t, searchIDs(t, portal, token, "?id="+gev1), "another tenant's delivery id finds nothing")
	req := httptest.NewRequest("GET", "/deliveries?status=nope", nil)
	rec := httptest.NewRecorder()
	op.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusBadRequest, rec.Code)

	for _, tok := range []string{token, ""} {
		req := httptest.NewRequest("GET", "/backlog", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		portal.ServeHTTP(rec, req)
		assert.Contains(t, []int{http.StatusNotFound, http.StatusUnauthorized}, rec.Code, "the portal has no backlog (token %q)", tok)
	}
	rec = httptest.NewRecorder()
	op.ServeHTTP(rec, httptest.NewRequest("GET", "/backlog", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var bl map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &bl))
	assert.Contains(t, bl, "due", fmt.Sprint(bl))
}

// TestSearchDeliveriesByTime: from and to keep the deliveries created in the window, and a search
// bounded by to reads each webhook's listing from to, so older deliveries are found however many
// newer ones there are (limit 2 below five newer ones); a bad or reversed window is refused.
func TestSearchDeliveriesByTime(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	ctx := context.Background()
	wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}})
	require.NoError(t, err)
	t0 := clock.Now()
	ids := map[string]string{}
	for i, ev := range []string{"h0", "h1", "h2", "n0", "n1", "n2", "n3", "n4"} {
		if i > 0 && i < 4 {
			clock.Advance(time.Hour)
		}
		typ := "order.created"
		if ev[0] == 'n' {
			typ = "newer.created"
		}
		_, err := d.Dispatch(ctx, Event{ID: ev, Type: typ})
		require.NoError(t, err)
		dl, err := d.Deliveries().Find(ctx, wh.ID, ev)
		require.NoError(t, err)
		ids[ev] = dl.ID
	}
	at := func(d time.Duration) string { return t0.Add(d).UTC().Format(time.RFC3339) }
	for _, tc := range []struct {
		name, query string
		want        []string
	}{
		{"window", "?from=" + at(30*time.Minute) + "&to=" + at(90*time.Minute), []string{"h1"}},
		{"to, below newer ones", "?to=" + at(90*time.Minute) + "&limit=2", []string{"h1", "h0"}},
		{"from", "?from=" + at(90*time.Minute) + "&event_type=order.created", []string{"h2"}},
		{"an id in the window", "?id=h0&to=" + at(30*time.Minute), []string{"h0"}},
		{"an id outside it", "?id=h0&from=" + at(30*time.Minute), nil},
	} {
		want := []string{}
		for _, ev := range tc.want {
			want = append(want, ids[ev])
		}
		assert.Equal(t, want, searchIDs(t, d.Handler(), "", tc.query), tc.name)
	}
	for _, q := range []string{"?from=yesterday", "?to=" + at(0) + "&from=" + at(time.Hour)} {
		rec := call(d.Handler(), "GET", "/deliveries"+q, "")
		assert.Equal(t, http.StatusBadRequest, rec.Code, q)
	}
}

// TestSearchBefore1970FindsNothing: a search whose "to" is before 1970 answers an empty list, not an
// error about a cursor the caller never gave.
func TestSearchBefore1970FindsNothing(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	mustCreate(t, d, rc, "*")
	_, err := d.Dispatch(context.Background(), Event{Type: "a.b", ID: "e1"})
	require.NoError(t, err)
	assert.Len(t, searchIDs(t, d.Handler(), "", "?to=2999-01-01T00:00:00Z"), 1)
	assert.Empty(t, searchIDs(t, d.Handler(), "", "?to=1960-01-01T00:00:00Z"))
	assert.Empty(t, searchIDs(t, d.Handler(), "", "?to=1969-12-31T23:59:59.999Z"))
}

// TestSearchRefusesACursorAtNoPosition: a cursor of the right shape at stream position 0-0, which no
// listing issues and before which no entry can be (Redis refuses the exclusive range it would start),
// is refused with 400 in words by the operator's search, a portal's search and a webhook's page, and
// logs nothing at error level (issue 43, finding 8). Broken by accepting 0-0 in decodeCursorAs (on a
// real Redis: 500 and an ERROR log line "invalid end ID for the interval").
func TestSearchRefusesACursorAtNoPosition(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	var logs bytes.Buffer
	var logMu sync.Mutex
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32)),
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil))})
	rc := newReceiver(t)
	ctx := context.Background()
	wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "acme"})
	require.NoError(t, err)
	_, err = d.Dispatch(ctx, Event{Type: "a.b", ID: "e1", Tenant: "acme"})
	require.NoError(t, err)
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	// Version byte (2: the operator's and a webhook's listings, 3: a tenant's), ms 0, seq 0, no id.
	operator, tenant := "AgAAAAAAAAAAAAAAAAAAAAA", "AwAAAAAAAAAAAAAAAAAAAAA"
	for _, c := range []struct {
		name   string
		h      http.Handler
		token  string
		target string
	}{
		{"portal search", d.Portal(), token, "/deliveries?status=failed&cursor=" + tenant},
		{"portal search, unfiltered", d.Portal(), token, "/deliveries?cursor=" + tenant},
		{"operator search", d.Handler(), "", "/deliveries?status=failed&cursor=" + operator},
		{"webhook page", d.Handler(), "", "/webhooks/" + wh.ID + "/deliveries?cursor=" + operator},
	} {
		rec := call(c.h, "GET", c.target, c.token)
		assert.Equal(t, http.StatusBadRequest, rec.Code, "%s: %s", c.name, rec.Body.String())
		assert.Contains(t, rec.Body.String(), "cursor", "%s: the answer names the cursor", c.name)
	}
	logMu.Lock()
	defer logMu.Unlock()
	assert.NotContains(t, logs.String(), "level=ERROR", "a bad cursor is the caller's mistake, not the server's")
}
