package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// call sends one request to h (with a portal token when set).
func call(h http.Handler, method, target, token string) *httptest.ResponseRecorder {
	return callWith(h, method, target, token, "")
}

// callWith is call with a JSON body ("" for none).
func callWith(h http.Handler, method, target, token, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestRetryNow: POST /deliveries/{id}/retry makes a pending delivery that waits an hour for its retry
// due now (the next ProcessDue attempts it); a delivery that succeeded is refused with 409; the
// portal retries its tenant's delivery but not another tenant's (404).
func TestRetryNow(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32)), RetrySchedule: []time.Duration{time.Hour, time.Hour}})
	rc := newReceiver(t)
	ctx := context.Background()
	acme, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "acme"})
	require.NoError(t, err)
	globex, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "globex"})
	require.NoError(t, err)
	rc.status.Store(http.StatusServiceUnavailable)
	for _, tenant := range []string{"acme", "globex"} {
		_, err := d.Dispatch(ctx, Event{Tenant: tenant, ID: "ev1", Type: "order.created"})
		require.NoError(t, err)
	}
	rc.status.Store(0)
	find := func(wh *Webhook) *Delivery {
		dl, err := d.Deliveries().Find(ctx, wh.ID, "ev1")
		require.NoError(t, err)
		return dl
	}
	require.Equal(t, StatusPending, find(acme).Status)
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing is due for an hour")

	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	portal := d.Portal()
	assert.Equal(t, http.StatusNotFound, call(portal, "POST", "/deliveries/"+find(globex).ID+"/retry", token).Code, "another tenant's")
	rec := call(portal, "POST", "/deliveries/"+find(acme).ID+"/retry", token)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	n, err = d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the retried delivery is due now, the other is not")
	assert.Equal(t, StatusSuccess, find(acme).Status)
	assert.Equal(t, StatusPending, find(globex).Status)

	rec = call(d.Handler(), "POST", "/deliveries/"+find(acme).ID+"/retry", "")
	assert.Equal(t, http.StatusConflict, rec.Code)
	assert.Contains(t, rec.Body.String(), `"not_retryable"`)
}

// TestDeliveryPayload: GET /deliveries/{id}/payload is the body the delivery sends; the portal reads
// its tenant's, not another tenant's (404).
func TestDeliveryPayload(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	rc := newReceiver(t)
	ctx := context.Background()
	ids := map[string]string{}
	for _, tenant := range []string{"acme", "globex"} {
		wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: tenant})
		require.NoError(t, err)
		_, err = d.Dispatch(ctx, Event{Tenant: tenant, ID: "ev1", Type: "order.created", Data: map[string]any{"who": tenant}})
		require.NoError(t, err)
		dl, err := d.Deliveries().Find(ctx, wh.ID, "ev1")
		require.NoError(t, err)
		ids[tenant] = dl.ID
	}
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	rec := call(d.Portal(), "GET", "/deliveries/"+ids["acme"]+"/payload", token)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var got struct {
		Payload struct {
			ID, Type string
			Data     map[string]string
		}
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	assert.Equal(t, "ev1", got.Payload.ID)
	assert.Equal(t, "order.created", got.Payload.Type)
	assert.Equal(t, "acme", got.Payload.Data["who"])
	assert.Equal(t, http.StatusNotFound, call(d.Portal(), "GET", "/deliveries/"+ids["globex"]+"/payload", token).Code)

	// An ordered event's body is stored in the shard of its order key.
	_, err = d.Dispatch(ctx, Event{Tenant: "acme", ID: "ev2", Type: "order.paid", OrderKey: "order-7", Data: map[string]any{"who": "acme"}})
	require.NoError(t, err)
	wh, err := d.Webhooks().ListTenant(ctx, "acme")
	require.NoError(t, err)
	dl, err := d.Deliveries().Find(ctx, wh[0].ID, "ev2")
	require.NoError(t, err)
	rec = call(d.Portal(), "GET", "/deliveries/"+dl.ID+"/payload", token)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	assert.Equal(t, "ev2", got.Payload.ID)
	assert.Equal(t, "order.paid", got.Payload.Type)
}
