package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/admin"
	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProbeNow: POST /webhooks/{id}/probe on an open circuit, ten minutes before its probe is due,
// makes its parked deliveries due (not its retries, which wait for their own time): the next worker
// pass sends one as the probe, whose success closes the circuit, and the one after delivers the rest.
// A closed circuit, a probe in flight and a disabled webhook are refused in words; the portal does not
// serve the route.
func TestProbeNow(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32)), BreakAfter: 2,
		BreakFor: 10 * time.Minute, RetrySchedule: []time.Duration{time.Hour, time.Hour}})
	rc := newReceiver(t)
	ctx := context.Background()
	wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "acme"})
	require.NoError(t, err)
	rc.status.Store(http.StatusServiceUnavailable)
	for i := range 5 { // two failures open the circuit; the next three are parked
		res, err := d.Dispatch(ctx, Event{Tenant: "acme", ID: fmt.Sprintf("ev%d", i), Type: "order.created"})
		require.NoError(t, err)
		if i >= 2 {
			require.ErrorIs(t, res[0].Err, ErrDeferred, "parked")
		}
	}
	h, err := d.Webhooks().Health(ctx, wh.ID)
	require.NoError(t, err)
	require.Equal(t, CircuitOpen, h.State)
	require.Equal(t, 2, rc.count())
	rc.status.Store(0) // the endpoint is back; its circuit does not know it for ten minutes
	clock.Advance(time.Second)
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing is due before the open period ends")

	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	assert.Contains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed},
		call(d.Portal(), "POST", "/webhooks/"+wh.ID+"/probe", token).Code, "probe now is the operator's")

	rec := call(d.Handler(), "POST", "/webhooks/"+wh.ID+"/probe", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var got struct {
		Circuit       Health `json:"circuit"`
		DeliveriesDue int    `json:"deliveries_due"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	assert.Equal(t, 3, got.DeliveriesDue, "the three parked deliveries; the two retries wait an hour")
	assert.Equal(t, CircuitOpen, got.Circuit.State)
	assert.False(t, got.Circuit.OpenUntil.After(clock.Now()), "the open period has ended")

	clock.Advance(admin.ProbeNowDelay)
	n, err = d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "one probe")
	h, err = d.Webhooks().Health(ctx, wh.ID)
	require.NoError(t, err)
	assert.Equal(t, CircuitClosed, h.State, "the probe's success closed the circuit")
	n, err = d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the other parked deliveries follow")
	for i := range 5 {
		dl, err := d.Deliveries().Find(ctx, wh.ID, fmt.Sprintf("ev%d", i))
		require.NoError(t, err)
		want := StatusSuccess
		if i < 2 {
			want = StatusPending // retries, at their own time
		}
		assert.Equal(t, want, dl.Status, "ev%d", i)
	}

	// Refusals, in words.
	for _, tc := range []struct {
		name, code, words string
		setup             func()
	}{
		{"closed", "probe_refused", "not paused", func() {}},
		{"probe in flight", "probe_refused", "already in flight", func() {
			c := fmt.Sprintf("2:%d:%d:%d:0:0:0::", clock.Now().UnixMilli(), clock.Now().UnixMilli(), time.Minute.Milliseconds())
			require.NoError(t, tr.rdb.HSet(ctx, d.keys.Circuits(), wh.ID, c).Err())
			_, ok := d.breaker.TryProbe(ctx, wh.ID, clock.Now(), Health{})
			require.True(t, ok)
		}},
		{"disabled", "webhook_disabled", "enable it", func() {
			w, err := d.Webhooks().Get(ctx, wh.ID)
			require.NoError(t, err)
			w.Disabled = true
			_, err = d.Webhooks().Update(ctx, *w)
			require.NoError(t, err)
		}},
	} {
		tc.setup()
		rec := call(d.Handler(), "POST", "/webhooks/"+wh.ID+"/probe", "")
		assert.Equal(t, http.StatusConflict, rec.Code, tc.name)
		assert.Contains(t, rec.Body.String(), `"`+tc.code+`"`, tc.name)
		assert.Contains(t, rec.Body.String(), tc.words, tc.name)
	}
	assert.Equal(t, http.StatusNotFound, call(d.Handler(), "POST", "/webhooks/nope/probe", "").Code)
}

// TestProbeNowLeavesAttemptsInFlight: a delivery leased when probe now runs keeps its lease end (it is
// not made due under its worker), while a parked one beside it is made due.
func TestProbeNowLeavesAttemptsInFlight(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{BreakAfter: 1, BreakFor: 10 * time.Minute, RetrySchedule: []time.Duration{time.Hour}})
	rc := newReceiver(t)
	ctx := context.Background()
	wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}})
	require.NoError(t, err)
	rc.status.Store(http.StatusServiceUnavailable)
	_, err = d.Dispatch(ctx, Event{ID: "opens", Type: "order.created"}) // opens the circuit
	require.NoError(t, err)
	var ids []string
	for _, id := range []string{"parked", "leased"} {
		res, err := d.Dispatch(ctx, Event{ID: id, Type: "order.created"})
		require.NoError(t, err)
		require.ErrorIs(t, res[0].Err, ErrDeferred, "parked")
		dl, err := d.Deliveries().Find(ctx, wh.ID, id)
		require.NoError(t, err)
		ids = append(ids, dl.ID)
	}
	// Lease the second by hand, as a worker holding it would.
	rec, err := d.deliveries.get(ctx, ids[1])
	require.NoError(t, err)
	shard, _ := d.keys.DeliveryShard(ids[1])
	end := clock.Now().Add(time.Minute)
	rec.HoldLease(randomHex(rdb.TokenLen/2), end)
	require.NoError(t, tr.rdb.Set(ctx, d.keys.Delivery(shard, ids[1]), rec.Encode(), 0).Err())
	// The lease ends before the open period: the probe-now read finds it among the parked.
	member, _, ok := queued(t, tr, d, shard, wh.ID, ids[1])
	require.True(t, ok, "parked in its queue")
	require.NoError(t, tr.rdb.ZAdd(ctx, d.keys.Queue(shard, wh.ID), redis.Z{Score: float64(end.UnixMilli()), Member: member}).Err())

	_, n, err := d.admin.Probe(ctx, wh.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "only the parked delivery")
	_, score, ok := queued(t, tr, d, shard, wh.ID, ids[1])
	require.True(t, ok)
	assert.Equal(t, float64(end.UnixMilli()), score, "the leased delivery keeps its lease end")
}
