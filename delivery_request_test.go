package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/api"
)

// TestDeliveryRequest: GET /deliveries/{id}/request gives, for every header whose value it gives, the
// value the endpoint received (webhook-timestamp: the latest attempt's), lists every header the
// library sent, and gives no value of a signature, a custom header or a credential, in the operator's
// API and the portal alike.
func TestDeliveryRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		auth *EndpointAuth
	}{
		{"bearer", &EndpointAuth{Bearer: "tok-secret-1"}},
		{"basic", &EndpointAuth{Basic: &BasicAuth{User: "u", Password: "pw-secret-1"}}},
		{"none", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTestRedis(t)
			d, clock := newClockedDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32)), RetrySchedule: []time.Duration{time.Minute}})
			rc := newReceiver(t)
			ctx := context.Background()
			wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL + "/in", Events: []string{"*"}, Tenant: "acme",
				Headers: map[string]string{"X-Api-Key": "k-secret-1", "x_team": "t-secret-1"}, Auth: tc.auth})
			require.NoError(t, err)
			rc.status.Store(http.StatusInternalServerError)
			_, err = d.Dispatch(ctx, Event{Tenant: "acme", ID: "ev1", Type: "order.created"})
			require.NoError(t, err)
			rc.status.Store(0)
			clock.Advance(2 * time.Minute) // the retry: another timestamp
			drainDue(t, d)
			reqs := rc.requests()
			require.Len(t, reqs, 2)
			sent := reqs[1].Header
			require.NotEqual(t, reqs[0].Header.Get("webhook-timestamp"), sent.Get("webhook-timestamp"))
			dl, err := d.Deliveries().Find(ctx, wh.ID, "ev1")
			require.NoError(t, err)
			token, err := d.PortalToken("acme", time.Hour)
			require.NoError(t, err)
			for _, via := range []struct {
				h     http.Handler
				token string
			}{{d.Handler(), ""}, {d.Portal(), token}} {
				rec := call(via.h, "GET", "/deliveries/"+dl.ID+"/request", via.token)
				require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
				for _, secret := range []string{"secret-1", wh.Secret, "whsec_", sent.Get("webhook-signature")} {
					assert.NotContains(t, rec.Body.String(), secret)
				}
				var got api.DeliveryRequest
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
				assert.Equal(t, rc.srv.URL+"/in", got.URL)
				listed := map[string]bool{}
				for _, h := range got.Headers {
					listed[http.CanonicalHeaderKey(h.Name)] = true
					switch h.Source {
					case api.HeaderFixed, api.HeaderAttempt:
						assert.Equal(t, sent.Get(h.Name), h.Value, "%s: the value sent", h.Name)
					default:
						assert.Empty(t, h.Value, "%s: withheld", h.Name)
					}
				}
				for name := range sent {
					if name != "Accept-Encoding" && name != "Content-Length" { // the transport's own
						assert.True(t, listed[name], "%s was sent and is listed", name)
					}
				}
			}
		})
	}
}

// TestDeliveryRedeliveries: the delivery detail gives the times of a delivery's redeliveries (a
// Redeliver and a Recover), exactly, among index entries of the webhook's other deliveries made
// between them; a delivery never redelivered has none.
func TestDeliveryRedeliveries(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	rc := newReceiver(t)
	ctx := context.Background()
	wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}})
	require.NoError(t, err)
	rc.status.Store(http.StatusInternalServerError)
	fail := func() { // the pending retry fails for good
		clock.Advance(2 * time.Minute)
		drainDue(t, d)
	}
	var otherIDs []string // events in ev1's shard: their deliveries share its index
	for i := 0; len(otherIDs) < 120 && i < 100_000; i++ {
		if id := fmt.Sprintf("other%d", i); d.keys.ShardOf(id) == d.keys.ShardOf("ev1") {
			otherIDs = append(otherIDs, id)
		}
	}
	require.Len(t, otherIDs, 120)
	firstOther := otherIDs[0]
	noise := func() { // other deliveries of the webhook, indexed between
		for range 40 {
			_, err := d.Enqueue(ctx, Event{ID: otherIDs[0], Type: "order.created"})
			require.NoError(t, err)
			otherIDs = otherIDs[1:]
			clock.Advance(time.Millisecond)
		}
	}
	_, err = d.Dispatch(ctx, Event{ID: "ev1", Type: "order.created"})
	require.NoError(t, err)
	dl, err := d.Deliveries().Find(ctx, wh.ID, "ev1")
	require.NoError(t, err)
	fail()
	noise()
	clock.Advance(time.Hour)
	first := clock.Now()
	_, err = d.Redeliver(ctx, dl.ID)
	require.NoError(t, err)
	noise()
	fail()
	clock.Advance(time.Hour)
	second := clock.Now()
	n, err := d.Recover(ctx, wh.ID, first.Add(-3*time.Hour), second, 10)
	require.NoError(t, err)
	require.Positive(t, n)
	noise()
	fail()

	detail := func(id string) []time.Time {
		rec := call(d.Handler(), "GET", "/deliveries/"+id, "")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		var got struct {
			Attempts      int         `json:"attempts"`
			RedeliveredAt []time.Time `json:"redelivered_at"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
		return got.RedeliveredAt
	}
	got := detail(dl.ID)
	require.Len(t, got, 2, "%v", got)
	assert.Equal(t, first.UnixMilli(), got[0].UnixMilli(), "the Redeliver")
	assert.Equal(t, second.UnixMilli(), got[1].UnixMilli(), "the Recover")
	other, err := d.Deliveries().Find(ctx, wh.ID, firstOther)
	require.NoError(t, err)
	assert.Empty(t, detail(other.ID), "never redelivered")
}
