package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/api"
)

// TestOrderQueue: GET /deliveries/{id}/queue gives, from any delivery of an ordered key, the key's
// deliveries in the order they are attempted (the retrying head first, then those waiting behind it),
// and no other key's; an unordered delivery is refused with 400, another tenant's with 404.
func TestOrderQueue(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32)), RetrySchedule: []time.Duration{time.Hour}})
	rc := newReceiver(t)
	ctx := context.Background()
	wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "acme"})
	require.NoError(t, err)
	rc.status.Store(http.StatusServiceUnavailable) // the head retries; the others wait behind it
	ids := map[string]string{}
	for _, ev := range []struct{ id, key string }{{"e1", "cust-1"}, {"x1", "cust-2"}, {"e2", "cust-1"}, {"e3", "cust-1"}, {"u1", ""}} {
		_, err := d.Dispatch(ctx, Event{Tenant: "acme", ID: ev.id, Type: "order.created", OrderKey: ev.key})
		require.NoError(t, err)
		dl, err := d.Deliveries().Find(ctx, wh.ID, ev.id)
		require.NoError(t, err)
		ids[ev.id] = dl.ID
	}
	queue := func(h http.Handler, token, id string, want int) api.OrderQueue {
		rec := call(h, "GET", "/deliveries/"+id+"/queue", token)
		require.Equal(t, want, rec.Code, rec.Body.String())
		var q api.OrderQueue
		if want == http.StatusOK {
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &q))
		}
		return q
	}
	for _, from := range []string{"e1", "e2", "e3"} {
		q := queue(d.Handler(), "", ids[from], http.StatusOK)
		assert.Equal(t, "cust-1", q.OrderKey)
		assert.EqualValues(t, 3, q.Length)
		var got []string
		for _, dl := range q.Deliveries {
			got = append(got, dl.EventID)
			assert.Empty(t, dl.History, "no history in the queue")
		}
		assert.Equal(t, []string{"e1", "e2", "e3"}, got, "from %s: head first, in the order accepted", from)
		if assert.Len(t, q.Deliveries, 3) {
			assert.Equal(t, 1, q.Deliveries[0].Attempts, "the head was attempted")
			assert.Zero(t, q.Deliveries[1].Attempts, "the others wait")
		}
	}
	assert.EqualValues(t, 1, queue(d.Handler(), "", ids["x1"], http.StatusOK).Length, "another key's queue")
	queue(d.Handler(), "", ids["u1"], http.StatusBadRequest)
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	assert.EqualValues(t, 3, queue(d.Portal(), token, ids["e2"], http.StatusOK).Length)
	other, err := d.PortalToken("globex", time.Hour)
	require.NoError(t, err)
	queue(d.Portal(), other, ids["e2"], http.StatusNotFound)
}
