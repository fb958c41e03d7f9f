package webhooks

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recoverFixture is a webhook whose receiver answers 500, with failed deliveries created before, in and
// after a window [since, until).
type recoverFixture struct {
	d                 *Dispatcher
	clock             *testClock
	rc                *receiver
	wh                *Webhook
	since, until      time.Time
	before, in, after []string
	recorded          map[string]int // requests per delivery once all had failed
}

func newRecoverFixture(t *testing.T, nBefore, nIn, nAfter int) *recoverFixture {
	t.Helper()
	s := newFailingSetup(t)
	f := &recoverFixture{d: s.d, clock: s.clock, rc: s.rc, wh: s.wh}
	mustCreate(t, f.d, newReceiver(t), "*") // another webhook's failures are not this one's

	f.before = pageDispatch(t, f.d, f.clock, f.wh, "before", nBefore, 1)
	f.clock.Advance(time.Second)
	f.since = f.clock.Now().Truncate(time.Millisecond) // CreatedAt has millisecond precision
	f.in = pageDispatch(t, f.d, f.clock, f.wh, "in", nIn, 2)
	f.clock.Advance(time.Second)
	f.until = f.clock.Now()
	f.clock.Advance(time.Second)
	f.after = pageDispatch(t, f.d, f.clock, f.wh, "after", nAfter, 1)
	failPendingDue(t, f.d, f.clock)
	for _, id := range append(append(append([]string(nil), f.before...), f.in...), f.after...) {
		dl, err := f.d.Deliveries().Get(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, StatusFailed, dl.Status)
	}
	f.recorded = f.rc.perDelivery()
	return f
}

// resent returns how many requests each delivery got since the fixture was made.
func (f *recoverFixture) resent() map[string]int {
	out := map[string]int{}
	for id, n := range f.rc.perDelivery() {
		if n != f.recorded[id] {
			out[id] = n - f.recorded[id]
		}
	}
	return out
}

// TestRecoverResendsTheWindowOnce: 50 failed deliveries in the window and 10 outside it; Recover re-sends
// exactly the 50, once each, and a second Recover re-sends none.
func TestRecoverResendsTheWindowOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRecoverFixture(t, 5, 50, 5)

	n, err := f.d.Recover(ctx, f.wh.ID, f.since, f.until, 0)
	require.NoError(t, err)
	assert.Equal(t, 50, n)
	want := map[string]int{}
	for _, id := range f.in {
		want[id] = 1
	}
	assert.Equal(t, want, f.resent(), "exactly the window, once each")
	for _, id := range f.in {
		dl, err := f.d.Deliveries().Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, StatusPending, dl.Status, "re-sent, failed again, retry scheduled")
		assert.Equal(t, 3, dl.Attempts)
	}

	n, err = f.d.Recover(ctx, f.wh.ID, f.since, f.until, 0)
	require.NoError(t, err)
	assert.Zero(t, n, "idempotent")
	assert.Equal(t, want, f.resent(), "nothing more sent")

	// The deliveries outside the window are still failed; an open window takes them.
	n, err = f.d.Recover(ctx, f.wh.ID, time.Time{}, time.Time{}, 0)
	require.NoError(t, err)
	assert.Equal(t, 10, n)
	assert.Len(t, f.resent(), 60)
}

// TestRecoverLimit: at most limit per call; the next call takes the next ones.
func TestRecoverLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRecoverFixture(t, 0, 25, 0)
	for _, want := range []int{10, 10, 5, 0} {
		n, err := f.d.Recover(ctx, f.wh.ID, f.since, f.until, 10)
		require.NoError(t, err)
		assert.Equal(t, want, n)
	}
	resent := f.resent()
	assert.Len(t, resent, 25)
	for id, n := range resent {
		assert.Equal(t, 1, n, id)
	}
}

// TestRecoverRejectsBadArguments: unknown webhook, empty window, negative limit.
func TestRecoverRejectsBadArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	wh := mustCreate(t, d, newReceiver(t), "*")
	now := time.Now()
	cases := []struct {
		name         string
		webhookID    string
		since, until time.Time
		limit        int
		want         error
	}{
		{"unknown webhook", "wh_nope", now.Add(-time.Hour), now, 0, ErrNotFound},
		{"until before since", wh.ID, now, now.Add(-time.Hour), 0, ErrInvalidQuery},
		{"until equals since", wh.ID, now, now, 0, ErrInvalidQuery},
		{"negative limit", wh.ID, now.Add(-time.Hour), now, -1, ErrInvalidQuery},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, err := d.Recover(ctx, tc.webhookID, tc.since, tc.until, tc.limit)
			require.ErrorIs(t, err, tc.want)
			assert.Zero(t, n)
		})
	}
	n, err := d.Recover(ctx, wh.ID, now.Add(-time.Hour), time.Time{}, 5000)
	require.NoError(t, err, "a large limit is lowered, not refused")
	assert.Zero(t, n)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	n, err = d.Recover(canceled, wh.ID, now.Add(-time.Hour), now, 0)
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, n)
}
