package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/admin"
	"github.com/smartdrop/webhooks/internal/api"
)

// TestEndpointCounts: GET /webhooks/{id}/counts counts exactly the deliveries scheduled for an attempt,
// those of them parked behind an open circuit (not the retries waiting for their own later time), and
// the failed ones and the ordered ones waiting behind their key among the newest deliveries only,
// reading at most admin.CountsRecent records.
func TestEndpointCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opts  Options
		setup func(t *testing.T, d *Dispatcher, clock *testClock, rc *receiver, wh *Webhook)
		want  api.Counts
	}{
		{"open circuit", Options{BreakAfter: 2, BreakFor: 10 * time.Minute, RetrySchedule: []time.Duration{time.Hour}},
			func(t *testing.T, d *Dispatcher, _ *testClock, rc *receiver, _ *Webhook) {
				rc.status.Store(http.StatusServiceUnavailable)
				dispatchN(t, d, "ev", 5) // two failures open the circuit; three are parked
			}, api.Counts{Pending: 5, Parked: 3, Examined: 5}},
		{"failed and succeeded", Options{RetrySchedule: []time.Duration{time.Minute}},
			func(t *testing.T, d *Dispatcher, clock *testClock, rc *receiver, _ *Webhook) {
				rc.status.Store(http.StatusInternalServerError)
				dispatchN(t, d, "bad", 3)
				clock.Advance(2 * time.Minute)
				drainDue(t, d)
				rc.status.Store(0)
				dispatchN(t, d, "ok", 2)
			}, api.Counts{Failed: 3, Examined: 5}},
		{"ordered: waiting behind their key", Options{},
			func(t *testing.T, d *Dispatcher, _ *testClock, _ *receiver, _ *Webhook) {
				for i := range 4 { // no worker: the head is scheduled, the three after it wait behind it
					_, err := d.Enqueue(context.Background(), Event{ID: fmt.Sprintf("o%d", i), Type: "order.created", OrderKey: "order-1"})
					require.NoError(t, err)
				}
			}, api.Counts{Pending: 1, Waiting: 3, Examined: 4}},
		{"ordered: the one after a delivered head is queued, not waiting", Options{},
			func(t *testing.T, d *Dispatcher, _ *testClock, _ *receiver, _ *Webhook) {
				for i := range 3 {
					_, err := d.Enqueue(context.Background(), Event{ID: fmt.Sprintf("o%d", i), Type: "order.created", OrderKey: "order-1"})
					require.NoError(t, err)
				}
				n, err := d.ProcessDue(context.Background()) // the head succeeds; the second is promoted to the queue
				require.NoError(t, err)
				require.Equal(t, 1, n)
			}, api.Counts{Pending: 1, Waiting: 1, Examined: 3}},
		{"only the newest are read", Options{RetrySchedule: []time.Duration{time.Minute}},
			func(t *testing.T, d *Dispatcher, clock *testClock, rc *receiver, _ *Webhook) {
				rc.status.Store(http.StatusInternalServerError)
				dispatchN(t, d, "old", 50)
				clock.Advance(2 * time.Minute)
				drainDue(t, d) // the 50 oldest fail
				clock.Advance(time.Second)
				for i := range 2 * admin.CountsRecent { // then the newest 200 wait for the worker
					_, err := d.Enqueue(context.Background(), Event{ID: fmt.Sprintf("new%d", i), Type: "order.created"})
					require.NoError(t, err)
				}
			}, api.Counts{Pending: 2 * admin.CountsRecent, Examined: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTestRedis(t)
			d, clock := newClockedDispatcher(t, tr, tc.opts)
			rc := newReceiver(t)
			wh, err := d.Webhooks().Create(context.Background(), Webhook{URL: rc.srv.URL, Events: []string{"*"}})
			require.NoError(t, err)
			tc.setup(t, d, clock, rc, wh)
			rec := call(d.Handler(), "GET", "/webhooks/"+wh.ID+"/counts", "")
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			var got api.Counts
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
			if tc.want.Examined < 0 { // a bounded read: some of the newest, none of the older
				assert.LessOrEqual(t, got.Examined, admin.CountsRecent)
				assert.GreaterOrEqual(t, got.Examined, admin.CountsRecent/2, "most of the newest admin.CountsRecent are read")
				got.Examined = -1
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// dispatchN dispatches n events with ids prefix0.. prefix<n-1>.
func dispatchN(t *testing.T, d *Dispatcher, prefix string, n int) {
	t.Helper()
	for i := range n {
		_, err := d.Dispatch(context.Background(), Event{ID: fmt.Sprintf("%s%d", prefix, i), Type: "order.created"})
		require.NoError(t, err)
	}
}

// TestEndpointCountsSayWhetherReplayWorks: the counts answer says whether the endpoint's replay can
// work, and it is true to POST /webhooks/{id}/replay: available with Options.ReplayIndex, else not,
// and the replay is then refused.
func TestEndpointCountsSayWhetherReplayWorks(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("ReplayIndex %v", on), func(t *testing.T) {
			t.Parallel()
			d := newTestDispatcher(t, newTestRedis(t), Options{ReplayIndex: on})
			wh, err := d.Webhooks().Create(context.Background(), Webhook{URL: "https://example.com/hook", Events: []string{"*"}})
			require.NoError(t, err)
			rec := call(d.Handler(), "GET", "/webhooks/"+wh.ID+"/counts", "")
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			var got struct {
				ReplayAvailable *bool `json:"replay_available"`
			}
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
			require.NotNil(t, got.ReplayAvailable, "the answer says whether replay works: %s", rec.Body.String())
			assert.Equal(t, on, *got.ReplayAvailable)
			replay := callWith(d.Handler(), "POST", "/webhooks/"+wh.ID+"/replay", "", `{"since":"2026-01-01T00:00:00Z"}`)
			assert.Equal(t, on, replay.Code == http.StatusOK, "replay answered %d: %s", replay.Code, replay.Body.String())
		})
	}
}
