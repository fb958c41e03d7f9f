package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/admin"
)

// TestRetryNowAndProbeNowInGo: the operator's two actions are Go calls too. RetryNow makes a pending
// delivery that waits an hour due now (the next pass attempts it), refuses a delivery that succeeded
// with ErrNotRetryable and an unknown id with ErrNotFound; ProbeNow refuses a closed circuit with
// ErrProbeRefused, and on an open one makes its parked deliveries due, the first of them the probe.
func TestRetryNowAndProbeNowInGo(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{BreakAfter: 2, BreakFor: 10 * time.Minute,
		RetrySchedule: []time.Duration{time.Hour, time.Hour}})
	rc := newReceiver(t)
	ctx := context.Background()
	wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}})
	require.NoError(t, err)

	_, err = d.ProbeNow(ctx, wh.ID)
	require.ErrorIs(t, err, ErrProbeRefused, "a closed circuit has no probe to make")
	_, err = d.ProbeNow(ctx, "wh_nope")
	require.ErrorIs(t, err, ErrNotFound)

	rc.status.Store(http.StatusServiceUnavailable)
	res, err := d.Dispatch(ctx, Event{ID: "ev0", Type: "order.created"})
	require.NoError(t, err)
	id := res[0].Delivery.ID
	rc.status.Store(0)
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "the retry waits an hour")
	dl, err := d.RetryNow(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, id, dl.ID)
	n, err = d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "retried now")
	got, err := d.Deliveries().Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, got.Status)
	_, err = d.RetryNow(ctx, id)
	assert.ErrorIs(t, err, ErrNotRetryable, "a delivery that succeeded")
	_, err = d.RetryNow(ctx, "dlv_nope")
	assert.ErrorIs(t, err, ErrNotFound)

	rc.status.Store(http.StatusServiceUnavailable)
	for i := range 4 { // two failures open the circuit; the next two are parked
		_, err := d.Dispatch(ctx, Event{ID: fmt.Sprintf("p%d", i), Type: "order.created"})
		require.NoError(t, err)
	}
	rc.status.Store(0)
	h, err := d.ProbeNow(ctx, wh.ID)
	require.NoError(t, err)
	require.NotNil(t, h)
	assert.Equal(t, CircuitOpen, h.State)
	assert.False(t, h.OpenUntil.After(clock.Now()), "the open period has ended")
	clock.Advance(admin.ProbeNowDelay)
	n, err = d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "one probe")
	health, err := d.Webhooks().Health(ctx, wh.ID)
	require.NoError(t, err)
	assert.Equal(t, CircuitClosed, health.State, "the probe's success closed the circuit")
}
