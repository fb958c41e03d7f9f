package webhooks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplayRoute: POST /webhooks/{id}/replay on Handler and Portal schedules the missed events and
// answers their count; the portal reaches only its tenant's webhooks (another's is 404); a bad body
// is 400, and so is a Dispatcher without the replay index.
func TestReplayRoute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{ReplayIndex: true, PortalKey: []byte(strings.Repeat("p", 32))})
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, id := range []string{"a1", "a2"} {
		_, err := d.Enqueue(ctx, Event{Tenant: "acme", ID: id, Type: "order.created"})
		require.NoError(t, err)
	}
	rc := newReceiver(t)
	acme, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "acme"})
	require.NoError(t, err)
	globex, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "globex"})
	require.NoError(t, err)
	body := `{"since": "` + since + `"}`
	var out struct {
		Scheduled  int    `json:"scheduled"`
		NextCursor string `json:"next_cursor"`
	}
	api := newAPI(t, d)
	api.do("POST", "/webhooks/"+acme.ID+"/replay", body).ok(t, http.StatusOK, &out)
	assert.Equal(t, 2, out.Scheduled)
	assert.Empty(t, out.NextCursor, "one page holds them all")
	api.do("POST", "/webhooks/"+acme.ID+"/replay", body).ok(t, http.StatusOK, &out)
	assert.Zero(t, out.Scheduled, "a second replay schedules nothing")
	for _, bad := range []string{"", `{}`, `{"since": "yesterday"}`, `{"since": "` + since + `", "x": 1}`, `{"since": "` + since + `", "cursor": "junk"}`} {
		api.do("POST", "/webhooks/"+acme.ID+"/replay", bad).apiErr(t, http.StatusBadRequest, "invalid_request")
	}
	api.do("POST", "/webhooks/wh_unknown/replay", body).apiErr(t, http.StatusNotFound, "not_found")

	portal := func(tenant, id string) *httptest.ResponseRecorder {
		token, err := d.PortalToken(tenant, time.Hour)
		require.NoError(t, err)
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/webhooks/"+id+"/replay", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		d.Portal().ServeHTTP(rec, req)
		return rec
	}
	assert.Equal(t, http.StatusNotFound, portal("acme", globex.ID).Code, "another tenant's webhook")
	rec := portal("globex", globex.ID)
	assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.JSONEq(t, `{"scheduled": 0}`, rec.Body.String(), "acme's events are not globex's")
	rec = portal("acme", acme.ID)
	assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.JSONEq(t, `{"scheduled": 0}`, rec.Body.String())

	off := newTestDispatcher(t, tr, Options{})
	newAPI(t, off).do("POST", "/webhooks/"+acme.ID+"/replay", body).apiErr(t, http.StatusBadRequest, "invalid_request")
}
