package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks/internal/admin"
	"github.com/smartdrop/webhooks/internal/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unknownDeliveryID is a well-formed delivery id (shard 0) that no test creates.
const unknownDeliveryID = "dlv_00" + "000000000000000000000000"

// apiClient calls a dispatcher's admin API over a loopback httptest server.
type apiClient struct {
	t    testing.TB
	base string
}

func newAPI(t testing.TB, d *Dispatcher) *apiClient {
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	return &apiClient{t: t, base: srv.URL}
}

// apiResponse is an admin API answer.
type apiResponse struct {
	status int
	header http.Header
	body   []byte
}

func (c *apiClient) do(method, path, body string) apiResponse {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return apiResponse{resp.StatusCode, resp.Header, b}
}

// ok checks the status and decodes a JSON body into dst (when not nil).
func (r apiResponse) ok(t testing.TB, status int, dst any) {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	if status == http.StatusNoContent {
		assert.Empty(t, r.body)
		return
	}
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	if dst != nil {
		dec := json.NewDecoder(bytes.NewReader(r.body))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(dst), "body: %s", r.body)
	}
}

// apiErr checks an error answer: status, JSON envelope, code.
func (r apiResponse) apiErr(t testing.TB, status int, code string) string {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	var e api.ErrorBody
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&e), "body: %s", r.body)
	assert.Equal(t, code, e.Error.Code)
	assert.NotEmpty(t, e.Error.Message)
	return e.Error.Message
}

// TestHandlerWebhookCRUD: create, read, list, patch, delete; secrets only in the create answer.
func TestHandlerWebhookCRUD(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	api := newAPI(t, d)
	rc := newReceiver(t)

	var created Webhook
	api.do("POST", "/webhooks", fmt.Sprintf(`{"url": %q, "events": ["order.*", "user.created"], "description": "orders"}`, rc.srv.URL)).
		ok(t, http.StatusCreated, &created)
	assert.True(t, strings.HasPrefix(created.Secret, "whsec_"), "create shows the secret")
	assert.Equal(t, rc.srv.URL, created.URL)
	assert.Equal(t, []string{"order.*", "user.created"}, created.Events)
	assert.Equal(t, "orders", created.Description)
	assert.False(t, created.Disabled)

	var second Webhook
	api.do("POST", "/webhooks", fmt.Sprintf(`{"url": %q, "events": ["*"], "disabled": true}`, rc.srv.URL)).
		ok(t, http.StatusCreated, &second)
	assert.True(t, second.Disabled)

	var got Webhook
	api.do("GET", "/webhooks/"+created.ID, "").ok(t, http.StatusOK, &got)
	assert.Empty(t, got.Secret, "GET omits the secret")
	assert.NotContains(t, string(api.do("GET", "/webhooks/"+created.ID, "").body), "secret")
	created.Secret = ""
	assert.Equal(t, created.ID, got.ID)
	assert.Equal(t, created.Events, got.Events)

	var list struct {
		Webhooks []Webhook `json:"webhooks"`
	}
	res := api.do("GET", "/webhooks", "")
	res.ok(t, http.StatusOK, &list)
	require.Len(t, list.Webhooks, 2)
	assert.NotContains(t, string(res.body), "whsec_")
	assert.ElementsMatch(t, []string{created.ID, second.ID}, []string{list.Webhooks[0].ID, list.Webhooks[1].ID})
	first, last := list.Webhooks[0], list.Webhooks[1]
	assert.True(t, first.CreatedAt.Before(last.CreatedAt) || first.CreatedAt.Equal(last.CreatedAt) && first.ID < last.ID,
		"ordered by creation time (ms), then id")

	patches := []struct {
		name, body string
		check      func(t *testing.T, w Webhook)
	}{
		{"description only", `{"description": "all orders"}`, func(t *testing.T, w Webhook) {
			assert.Equal(t, "all orders", w.Description)
			assert.Equal(t, []string{"order.*", "user.created"}, w.Events)
			assert.Equal(t, rc.srv.URL, w.URL)
			assert.False(t, w.Disabled)
		}},
		{"disable", `{"disabled": true}`, func(t *testing.T, w Webhook) {
			assert.True(t, w.Disabled)
			assert.Equal(t, "all orders", w.Description)
		}},
		{"events and enable", `{"events": ["*"], "disabled": false}`, func(t *testing.T, w Webhook) {
			assert.Equal(t, []string{"*"}, w.Events)
			assert.False(t, w.Disabled)
			assert.Equal(t, "all orders", w.Description)
		}},
		{"url", fmt.Sprintf(`{"url": %q}`, rc.srv.URL+"/hook"), func(t *testing.T, w Webhook) {
			assert.Equal(t, rc.srv.URL+"/hook", w.URL)
			assert.Equal(t, []string{"*"}, w.Events)
		}},
		{"nothing", `{}`, func(t *testing.T, w Webhook) {
			assert.Equal(t, rc.srv.URL+"/hook", w.URL)
		}},
	}
	for _, p := range patches {
		t.Run("patch "+p.name, func(t *testing.T) {
			var w Webhook
			res := api.do("PATCH", "/webhooks/"+created.ID, p.body)
			res.ok(t, http.StatusOK, &w)
			assert.Empty(t, w.Secret, "PATCH omits the secret")
			p.check(t, w)
			stored, err := d.Webhooks().Get(context.Background(), created.ID)
			require.NoError(t, err)
			stored.Secret = ""
			assert.Equal(t, w.Events, stored.Events)
			assert.Equal(t, w.URL, stored.URL)
			assert.Equal(t, w.Disabled, stored.Disabled)
		})
	}

	api.do("DELETE", "/webhooks/"+created.ID, "").ok(t, http.StatusNoContent, nil)
	api.do("GET", "/webhooks/"+created.ID, "").apiErr(t, http.StatusNotFound, "not_found")
	api.do("DELETE", "/webhooks/"+created.ID, "").apiErr(t, http.StatusNotFound, "not_found")
	api.do("GET", "/webhooks", "").ok(t, http.StatusOK, &list)
	require.Len(t, list.Webhooks, 1)
}

// TestHandlerErrors: every route's error answers.
func TestHandlerErrors(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{})
	api := newAPI(t, d)
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	w := "/webhooks/" + wh.ID
	valid := fmt.Sprintf(`{"url": %q, "events": ["*"]}`, rc.srv.URL)
	big := fmt.Sprintf(`{"url": %q, "events": ["*"], "description": %q}`, rc.srv.URL, strings.Repeat("x", MaxRequestBody))
	since := url.QueryEscape(clock.Now().Add(-time.Hour).Format(time.RFC3339))

	cases := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/webhooks", `{"url":`, 400, "invalid_request"},
		{"POST", "/webhooks", `[1, 2]`, 400, "invalid_request"},
		{"POST", "/webhooks", "", 400, "invalid_request"},
		{"POST", "/webhooks", valid + `{}`, 400, "invalid_request"},
		{"POST", "/webhooks", strings.Replace(valid, `"events"`, `"secret": "whsec_x", "events"`, 1), 400, "invalid_request"},
		{"POST", "/webhooks", `{"url": "ftp://example.com", "events": ["*"]}`, 400, "invalid_request"},
		{"POST", "/webhooks", fmt.Sprintf(`{"url": %q, "events": []}`, rc.srv.URL), 400, "invalid_request"},
		{"POST", "/webhooks", fmt.Sprintf(`{"url": %q, "events": ["a..b"]}`, rc.srv.URL), 400, "invalid_request"},
		{"POST", "/webhooks", big, 413, "too_large"},
		{"GET", "/webhooks/wh_nope", "", 404, "not_found"},
		{"PATCH", "/webhooks/wh_nope", `{"description": "x"}`, 404, "not_found"},
		{"PATCH", w, `{"description": 5}`, 400, "invalid_request"},
		{"PATCH", w, `{"colour": "red"}`, 400, "invalid_request"},
		{"PATCH", w, `{"events": []}`, 400, "invalid_request"},
		{"PATCH", w, `{"url": "not a url"}`, 400, "invalid_request"},
		{"PATCH", w, "", 400, "invalid_request"},
		{"PATCH", w, big, 413, "too_large"},
		{"DELETE", "/webhooks/wh_nope", "", 404, "not_found"},
		{"POST", "/webhooks/wh_nope/test", "", 404, "not_found"},
		{"POST", "/webhooks/wh_nope/rotate-secret", "", 404, "not_found"},
		{"POST", w + "/rotate-secret", `{"grace_seconds": -1}`, 400, "invalid_request"},
		{"POST", w + "/rotate-secret", `{"grace_seconds": 99999999999999}`, 400, "invalid_request"},
		{"POST", w + "/rotate-secret", `{"grace_seconds": 1.5}`, 400, "invalid_request"},
		{"POST", w + "/rotate-secret", `{"grace": 5}`, 400, "invalid_request"},
		{"POST", w + "/rotate-secret", `{"grace_seconds": ` + strings.Repeat(" ", MaxRequestBody) + `1}`, 413, "too_large"},
		{"GET", "/webhooks/wh_nope/deliveries", "", 404, "not_found"},
		{"GET", w + "/deliveries?status=lost", "", 400, "invalid_request"},
		{"GET", w + "/deliveries?limit=0", "", 400, "invalid_request"},
		{"GET", w + "/deliveries?limit=ten", "", 400, "invalid_request"},
		{"GET", w + "/deliveries?cursor=%21%21", "", 400, "invalid_request"},
		{"GET", "/deliveries/nope", "", 404, "not_found"},
		{"GET", "/deliveries/" + unknownDeliveryID, "", 404, "not_found"},
		{"GET", "/deliveries/dlv_ff000000000000000000000000", "", 404, "not_found"},
		{"GET", "/deliveries/dlv_0" + strings.Repeat("0", 26), "", 404, "not_found"},
		{"POST", "/deliveries/nope/redeliver", "", 404, "not_found"},
		{"POST", "/deliveries/" + unknownDeliveryID + "/redeliver", "", 404, "not_found"},
		{"POST", w + "/recover", "", 400, "invalid_request"},
		{"POST", w + "/recover?since=yesterday", "", 400, "invalid_request"},
		{"POST", w + "/recover?since=" + since + "&until=later", "", 400, "invalid_request"},
		{"POST", w + "/recover?since=" + since + "&until=" + since, "", 400, "invalid_request"},
		{"POST", w + "/recover?since=" + since + "&limit=-3", "", 400, "invalid_request"},
		{"POST", "/webhooks/wh_nope/recover?since=" + since, "", 404, "not_found"},
		{"PUT", "/webhooks", "", 405, "method_not_allowed"},
		{"DELETE", "/deliveries/x", "", 405, "method_not_allowed"},
		{"GET", "/webhooks/x/test", "", 405, "method_not_allowed"},
		{"GET", "/nothing", "", 404, "not_found"},
		{"GET", "/webhooks/x/y/z", "", 404, "not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path[:min(len(tc.path), 60)], func(t *testing.T) {
			res := api.do(tc.method, tc.path, tc.body)
			res.apiErr(t, tc.status, tc.code)
			if tc.status == http.StatusMethodNotAllowed {
				assert.NotEmpty(t, res.header.Get("Allow"))
			}
		})
	}
	stored, err := d.Webhooks().Get(context.Background(), wh.ID)
	require.NoError(t, err)
	assert.Equal(t, wh.Secret, stored.Secret, "no failed request changed the webhook")
	assert.Equal(t, wh.Events, stored.Events)
	assert.Zero(t, rc.count(), "no failed request sent anything")
}

// TestHandlerInternalErrorIsLoggedNotLeaked: a Redis failure is a 500 with a generic message; the cause
// goes to the logger.
func TestHandlerInternalErrorIsLoggedNotLeaked(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	rdb := redis.NewClient(&redis.Options{Addr: dead, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	var logs handlerLogBuffer
	d := newTestDispatcherOn(t, rdb, tr, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	api := newAPI(t, d)

	for _, path := range []string{"/webhooks", "/webhooks/wh_x", "/deliveries/" + unknownDeliveryID} {
		msg := api.do("GET", path, "").apiErr(t, http.StatusInternalServerError, "internal")
		assert.Equal(t, "internal error", msg)
	}
	assert.Contains(t, logs.String(), dead, "the cause is logged")
	assert.Contains(t, logs.String(), "admin API request failed")
}

// handlerLogBuffer is a bytes.Buffer for concurrent writers.
type handlerLogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *handlerLogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *handlerLogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHandlerClassify maps every error kind of the root to the API's kind, and the answers' statuses.
func TestHandlerClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		kind api.Kind
	}{
		{fmt.Errorf("x: %w", ErrNotFound), api.KindNotFound},
		{fmt.Errorf("x: %w", ErrInvalidWebhook), api.KindBadRequest},
		{fmt.Errorf("x: %w", ErrInvalidCursor), api.KindBadRequest},
		{fmt.Errorf("x: %w", ErrInvalidQuery), api.KindBadRequest},
		{fmt.Errorf("x: %w", api.ErrBadRequest), api.KindBadRequest},
		{fmt.Errorf("x: %w", ErrConflict), api.KindConflict},
		{fmt.Errorf("x: %w", ErrWebhookDisabled), api.KindWebhookDisabled},
		{fmt.Errorf("x: %w", ErrTenantQuota), api.KindTenantQuota},
		{fmt.Errorf("dial tcp 10.0.0.1:6379: refused"), api.KindInternal},
		{context.Canceled, api.KindInternal},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.kind, new(admin.Backend).Classify(tc.err), "%v", tc.err)
	}
}

// TestHandlerTestAndRotate: a test send creates a delivery (201); rotation returns the new secret, which
// signs what follows.
func TestHandlerTestAndRotate(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	api := newAPI(t, d)
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "order.created")

	var dl Delivery
	api.do("POST", "/webhooks/"+wh.ID+"/test", "").ok(t, http.StatusCreated, &dl)
	assert.Equal(t, TestEventType, dl.EventType)
	assert.Equal(t, StatusSuccess, dl.Status)
	assert.Equal(t, wh.ID, dl.WebhookID)
	require.Equal(t, 1, rc.count())

	cases := []struct {
		body  string
		grace time.Duration
	}{{"", DefaultRotationGrace}, {`{}`, DefaultRotationGrace}, {`{"grace_seconds": 60}`, time.Minute}, {`{"grace_seconds": 0}`, 0}}
	prev := wh.Secret
	for _, tc := range cases {
		var rotated Webhook
		api.do("POST", "/webhooks/"+wh.ID+"/rotate-secret", tc.body).ok(t, http.StatusOK, &rotated)
		require.True(t, strings.HasPrefix(rotated.Secret, "whsec_"), "rotate shows the new secret")
		require.NotEqual(t, prev, rotated.Secret)
		s, _, err := d.Webhooks().load(context.Background(), wh.ID)
		require.NoError(t, err)
		assert.Equal(t, rotated.Secret, s.Secret)
		assert.Equal(t, prev, s.PrevSecret)
		assert.InDelta(t, time.Now().Add(tc.grace).UnixMilli(), s.PrevUntil, 5000, "grace for %q", tc.body)
		prev = rotated.Secret
	}
	var got Webhook
	api.do("GET", "/webhooks/"+wh.ID, "").ok(t, http.StatusOK, &got)
	assert.Empty(t, got.Secret)

	api.do("POST", "/webhooks/"+wh.ID+"/test", "").ok(t, http.StatusCreated, &dl)
	reqs := rc.requests()
	require.Len(t, reqs, 2)
	require.NoError(t, Verify(prev, reqs[1].Header, reqs[1].Body), "signed with the newest secret")
}

// TestHandlerDeliveries: paging over HTTP while new deliveries are written neither skips nor repeats;
// listedDelivery is a delivery as the admin API answers it: its record, and why it waits or failed.
type listedDelivery struct {
	Delivery
	Why string `json:"why"`
}

// listedPage is a page of deliveries as the admin API answers it.
type listedPage struct {
	Deliveries []listedDelivery `json:"deliveries"`
	NextCursor string           `json:"next_cursor"`
}

// the status filter; one delivery with its history.
func TestHandlerDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFailingSetup(t)
	d, clock, rc, wh := f.d, f.clock, f.rc, f.wh
	api := newAPI(t, d)
	failing := f.failed(t, "fail", 6, 1)
	rc.status.Store(http.StatusOK)
	original := append(failing, pageDispatch(t, d, clock, wh, "ok", 54, 2)...)
	clock.Advance(time.Millisecond)

	fetch := func(query string) func(cursor string) (*DeliveryPage, error) {
		return func(cursor string) (*DeliveryPage, error) {
			var listed listedPage
			api.do("GET", "/webhooks/"+wh.ID+"/deliveries?"+query+"&cursor="+url.QueryEscape(cursor), "").ok(t, http.StatusOK, &listed)
			page := &DeliveryPage{NextCursor: listed.NextCursor}
			for _, dl := range listed.Deliveries {
				assert.Empty(t, dl.History, "pages leave history out")
				if dl.Status == StatusFailed {
					assert.NotEmpty(t, dl.Why, "a failed delivery says why")
				}
				page.Deliveries = append(page.Deliveries, &dl.Delivery)
			}
			return page, nil
		}
	}
	n := 0
	got, pages := pageCollect(t, fetch("limit=7"), func() {
		pageDispatch(t, d, clock, wh, fmt.Sprintf("new%d", n), 3, 1)
		n++
	})
	assert.Equal(t, listingOrder(t, d, original), got, "the original 60, each once")
	assert.Equal(t, 9, pages)

	got, _ = pageCollect(t, fetch("status=failed&limit=4"), nil)
	assert.Equal(t, listingOrder(t, d, failing), got)

	var page listedPage
	api.do("GET", "/webhooks/"+wh.ID+"/deliveries", "").ok(t, http.StatusOK, &page)
	assert.Len(t, page.Deliveries, DefaultPageLimit)

	var dl listedDelivery
	api.do("GET", "/deliveries/"+failing[0], "").ok(t, http.StatusOK, &dl)
	assert.Equal(t, "failed after 2 attempts; the last: the endpoint answered 500 Internal Server Error", dl.Why)
	assert.Equal(t, StatusFailed, dl.Status)
	assert.Equal(t, 2, dl.Attempts)
	require.Len(t, dl.History, 2, "a delivery shows its history")
	assert.Equal(t, http.StatusInternalServerError, dl.History[1].StatusCode)
	stored, err := d.Deliveries().Get(ctx, failing[0])
	require.NoError(t, err)
	assert.Equal(t, stored.ID, dl.ID)
}

// TestHandlerConcurrentRedeliver: 10 concurrent redeliver requests for one failed delivery send it once.
func TestHandlerConcurrentRedeliver(t *testing.T) {
	t.Parallel()
	f := newFailingSetup(t)
	rc := f.rc
	api := newAPI(t, f.d)
	ids := f.failed(t, "again", 1, 1)
	before := rc.count()
	require.Equal(t, 2, before)

	const callers = 10
	var wg sync.WaitGroup
	results := make([]apiResponse, callers)
	start := make(chan struct{})
	for i := range callers {
		wg.Go(func() {
			<-start
			results[i] = api.do("POST", "/deliveries/"+ids[0]+"/redeliver", "")
		})
	}
	close(start)
	wg.Wait()
	for _, res := range results {
		var dl Delivery
		res.ok(t, http.StatusOK, &dl)
		assert.Equal(t, ids[0], dl.ID)
		assert.NotEqual(t, StatusFailed, dl.Status)
	}
	assert.Equal(t, before+1, rc.count(), "exactly one new request")

	var dl Delivery
	api.do("POST", "/deliveries/"+ids[0]+"/redeliver", "").ok(t, http.StatusOK, &dl)
	assert.Equal(t, StatusPending, dl.Status)
	assert.Equal(t, 3, dl.Attempts)
	assert.Equal(t, before+1, rc.count(), "redelivering a pending delivery sends nothing")
}

// TestHandlerRecover: recover over HTTP re-sends the window once.
func TestHandlerRecover(t *testing.T) {
	t.Parallel()
	f := newRecoverFixture(t, 3, 12, 3)
	api := newAPI(t, f.d)
	path := fmt.Sprintf("/webhooks/%s/recover?since=%s&until=%s", f.wh.ID,
		url.QueryEscape(f.since.Format(time.RFC3339Nano)), url.QueryEscape(f.until.Format(time.RFC3339Nano)))
	var out struct {
		Redelivered int `json:"redelivered"`
	}
	api.do("POST", path+"&limit=5", "").ok(t, http.StatusOK, &out)
	assert.Equal(t, 5, out.Redelivered)
	api.do("POST", path, "").ok(t, http.StatusOK, &out)
	assert.Equal(t, 7, out.Redelivered)
	api.do("POST", path, "").ok(t, http.StatusOK, &out)
	assert.Zero(t, out.Redelivered)
	assert.Len(t, f.resent(), 12)

	// until defaults to now: the later ones too.
	api.do("POST", fmt.Sprintf("/webhooks/%s/recover?since=%s", f.wh.ID, url.QueryEscape(f.since.Format(time.RFC3339Nano))), "").
		ok(t, http.StatusOK, &out)
	assert.Equal(t, 3, out.Redelivered)
	assert.Len(t, f.resent(), 15)
}

// TestHandlerUnderPrefix: the handler works under http.StripPrefix.
func TestHandlerUnderPrefix(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	wh := mustCreate(t, d, newReceiver(t), "*")
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", d.Handler()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	api := &apiClient{t: t, base: srv.URL}

	var got Webhook
	api.do("GET", "/admin/webhooks/"+wh.ID, "").ok(t, http.StatusOK, &got)
	assert.Equal(t, wh.ID, got.ID)
	api.do("GET", "/admin/nothing", "").apiErr(t, http.StatusNotFound, "not_found")
}

// TestHandlerTestSendDeferredIs202: a test send whose claim reply came too late to attempt within the
// lease is created and scheduled, not attempted: 202 with the pending delivery.
func TestHandlerTestSendDeferredIs202(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	c.AddHook(&slowClaimReply{delay: 700 * time.Millisecond})
	d := newTestDispatcherOn(t, c, tr, Options{Timeout: 200 * time.Millisecond})
	api := newAPI(t, d)
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "order.created")

	var dl Delivery
	api.do("POST", "/webhooks/"+wh.ID+"/test", "").ok(t, http.StatusAccepted, &dl)
	assert.Equal(t, StatusPending, dl.Status)
	assert.Equal(t, 0, dl.Attempts)
	assert.Equal(t, 0, rc.count(), "no attempt was started")
	stored, err := d.Deliveries().Get(context.Background(), dl.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusPending, stored.Status, "scheduled for a worker")
}

// TestHandlerHealthStatsSecret: the routes the web UI added: a webhook's circuit, its attempts per hour
// by outcome over the last 24 hours (counted by the outcome script in a ring that forgets older hours),
// and its secret on explicit request.
func TestHandlerHealthStatsSecret(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{BreakAfter: 3, RetrySchedule: []time.Duration{time.Hour}})
	api := newAPI(t, d)
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	other := mustCreate(t, d, rc, "other")

	type stats struct {
		Hours []HourStats `json:"hours"`
	}
	get := func(id string) stats {
		var s stats
		api.do("GET", "/webhooks/"+id+"/stats", "").ok(t, http.StatusOK, &s)
		require.Len(t, s.Hours, 24)
		for i := 1; i < 24; i++ {
			require.Equal(t, time.Hour, s.Hours[i].Hour.Sub(s.Hours[i-1].Hour), "hourly, oldest first")
		}
		require.Equal(t, clock.Now().UTC().Truncate(time.Hour), s.Hours[23].Hour, "the current hour last")
		return s
	}
	sum := func(s stats) (ok, failed int64) {
		for _, h := range s.Hours {
			ok, failed = ok+h.Success, failed+h.Failed
		}
		return ok, failed
	}
	dispatch := func(n int) {
		for range n {
			_, err := d.Dispatch(ctx, Event{Type: "x", ID: "e" + randomHex(6)})
			require.NoError(t, err)
		}
	}

	for _, id := range []string{wh.ID, other.ID} {
		ok, failed := sum(get(id))
		assert.Zero(t, ok+failed, "no attempts yet")
	}
	dispatch(3) // 3 successes this hour
	rc.status.Store(http.StatusInternalServerError)
	clock.Advance(time.Hour)
	dispatch(2) // 2 failures the next hour
	s := get(wh.ID)
	assert.Equal(t, HourStats{Hour: s.Hours[22].Hour, Success: 3}, s.Hours[22])
	assert.Equal(t, HourStats{Hour: s.Hours[23].Hour, Failed: 2}, s.Hours[23])
	ok, failed := sum(get(other.ID))
	assert.Zero(t, ok+failed, "another webhook's attempts are its own")

	var h Health
	api.do("GET", "/webhooks/"+wh.ID+"/health", "").ok(t, http.StatusOK, &h)
	assert.Equal(t, CircuitClosed, h.State)
	assert.Equal(t, 2, h.ConsecutiveFailures)

	// 23 hours on, the first hour has just left the window; a day after the failures, the ring slot
	// they were counted in is reused and starts from zero.
	clock.Advance(23 * time.Hour)
	ok, failed = sum(get(wh.ID))
	assert.Equal(t, [2]int64{0, 2}, [2]int64{ok, failed}, "the successes' hour left the window")
	clock.Advance(time.Hour)
	rc.status.Store(http.StatusOK)
	dispatch(1)
	s = get(wh.ID)
	ok, failed = sum(s)
	assert.Equal(t, [2]int64{1, 0}, [2]int64{ok, failed}, "the reused slot counts only the new hour")

	// Key: one hash per webhook, with a TTL of 25 h.
	ttl, err := tr.rdb.PTTL(ctx, d.keys.Hourly(wh.ID)).Result()
	require.NoError(t, err)
	assert.Positive(t, ttl)
	assert.LessOrEqual(t, ttl, 25*time.Hour)

	var secret struct {
		Secret    string `json:"secret"`
		PublicKey string `json:"public_key"`
	}
	api.do("GET", "/webhooks/"+wh.ID+"/secret", "").ok(t, http.StatusOK, &secret)
	assert.Equal(t, wh.Secret, secret.Secret)
	assert.Empty(t, secret.PublicKey)
	asym, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Asymmetric: true})
	require.NoError(t, err)
	api.do("GET", "/webhooks/"+asym.ID+"/secret", "").ok(t, http.StatusOK, &secret)
	assert.Equal(t, asym.Secret, secret.Secret)
	assert.Equal(t, asym.PublicKey, secret.PublicKey)

	for _, route := range []string{"secret", "health", "stats"} {
		api.do("GET", "/webhooks/wh_nope/"+route, "").apiErr(t, http.StatusNotFound, "not_found")
		api.do("POST", "/webhooks/"+wh.ID+"/"+route, "").apiErr(t, http.StatusMethodNotAllowed, "method_not_allowed")
	}
}

// TestHandlerUI: both handlers serve the embedded UI under /ui/ with a strict CSP; the portal serves its
// static files without a token, but no API route, and its page names the portal mode.
func TestHandlerUI(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	admin := httptest.NewServer(http.StripPrefix("/admin", d.Handler()))
	t.Cleanup(admin.Close)
	portal := httptest.NewServer(d.Portal())
	t.Cleanup(portal.Close)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(url string) (*http.Response, string) {
		resp, err := noRedirect.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	for _, tc := range []struct{ base, mode string }{{admin.URL + "/admin", "operator"}, {portal.URL, "portal"}} {
		for file, ctype := range map[string]string{"/ui/": "text/html", "/ui/index.html": "text/html",
			"/ui/app.js": "text/javascript", "/ui/app.css": "text/css"} {
			resp, body := get(tc.base + file)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s%s", tc.base, file)
			assert.Contains(t, resp.Header.Get("Content-Type"), ctype)
			assert.Equal(t, UIContentSecurityPolicy, resp.Header.Get("Content-Security-Policy"))
			assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
			assert.NotEmpty(t, body)
			if ctype == "text/html" {
				assert.Contains(t, body, `data-mode="`+tc.mode+`"`)
				assert.NotContains(t, body, "<script>", "no inline script")
				assert.NotContains(t, body, "style=", "no inline style")
				assert.NotContains(t, body, "http", "nothing from elsewhere")
			}
		}
		resp, _ := get(tc.base + "/ui")
		assert.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
		assert.Equal(t, "ui/", resp.Header.Get("Location"), "relative: works under any prefix")
		resp, _ = get(tc.base + "/ui/nope.js")
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	}
	// The portal's static files need no token; its API, even reached through /ui/.., does.
	resp, _ := get(portal.URL + "/webhooks")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	req, err := http.NewRequest("GET", portal.URL+"/ui/../webhooks", nil)
	require.NoError(t, err)
	req.URL.Opaque = "/ui/../webhooks" // as sent, uncleaned
	resp, err = noRedirect.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	req, err = http.NewRequest("POST", portal.URL+"/ui/", nil)
	require.NoError(t, err)
	resp, err = noRedirect.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "only GET and HEAD of the UI skip the token")
}
