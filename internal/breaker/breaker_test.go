package breaker

import (
	"context"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTestBreaker is a Breaker on the test's Redis whose clock the test sets (*now).
func newTestBreaker(t *testing.T, breakAfter int) (*Breaker, *time.Time) {
	t.Helper()
	tr := newTestRedis(t)
	now := circuitT0
	return New(Config{Client: tr.rdb, Keys: rdb.KeysOf(tr.prefix, 1), BreakAfter: breakAfter, BreakFor: 30 * time.Second,
		ProbeHold: 5 * time.Second, Now: func() time.Time { return now }}), &now
}

// fail counts a failure of webhookID at the Breaker's now, as settle does.
func fail(t *testing.T, b *Breaker, webhookID, probe string) Event {
	t.Helper()
	now := b.now()
	outs := []Outcome{{WebhookID: webhookID, Kind: Kind(false, destination.Unavailable), Probe: probe}}
	b.store.registered(context.Background(), outs...)
	keys, args := b.CountArgs(now, outs)
	events, err := b.Counted(rdb.Count.Run(context.Background(), b.store.rdb, keys, args...), now, outs)
	require.NoError(t, err)
	require.Len(t, events, 1)
	return events[0]
}

func TestKind(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		success bool
		failure destination.Kind
		want    string
	}{
		{true, destination.Unavailable, rdb.CountSuccess},
		{false, destination.Unavailable, rdb.CountFailure},
		{false, destination.Rejected, rdb.CountRejected}, {false, destination.Permanent, rdb.CountRejected},
		{false, destination.Gone, rdb.CountRejected},
	} {
		assert.Equal(t, c.want, Kind(c.success, c.failure), "success %v, failure %s", c.success, c.failure)
	}
}

// TestBreakerProbeRound: a count that opens the circuit is cached and seen at once (FailingNow,
// Circuit, Cached); no probe before the open period ends; one probe after it, then none while it is
// held; a probe given back may be taken again at once; its failure reopens the circuit for twice as long.
func TestBreakerProbeRound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, now := newTestBreaker(t, 2)
	require.False(t, b.FailingNow("wh_1"), "nothing known")
	require.Equal(t, types.CircuitClosed, b.Circuit(ctx, "wh_1").State)
	ev := fail(t, b, "wh_1", "")
	require.False(t, ev.Opened)
	require.True(t, b.FailingNow("wh_1"), "a failure counted here is known at once")
	ev = fail(t, b, "wh_1", "")
	require.True(t, ev.Opened)
	h := b.Circuit(ctx, "wh_1")
	require.Equal(t, types.CircuitOpen, h.State)
	require.Equal(t, h, b.Cached(*now, []string{"wh_1", "wh_2"})[0])
	require.Zero(t, b.Cached(*now, []string{"wh_2"})[0], "not read: not known")

	_, ok := b.TryProbe(ctx, "wh_1", *now, h)
	require.False(t, ok, "no probe before OpenUntil")
	*now = h.OpenUntil
	token, ok := b.TryProbe(ctx, "wh_1", *now, h)
	require.True(t, ok)
	require.Len(t, token, rdb.TokenLen)
	require.Equal(t, types.CircuitProbing, b.Circuit(ctx, "wh_1").State, "cached as the acquire left it")
	_, ok = b.TryProbe(ctx, "wh_1", *now, h)
	require.False(t, ok, "held")

	require.NoError(t, b.ReleaseProbe(ctx, "wh_1", token))
	require.Equal(t, types.CircuitOpen, b.Circuit(ctx, "wh_1").State, "given back: read again, open")
	token, ok = b.TryProbe(ctx, "wh_1", *now, h)
	require.True(t, ok, "taken again at once")
	ev = fail(t, b, "wh_1", token)
	require.True(t, ev.Opened, "the probe's failure reopens")
	require.Equal(t, time.Minute, ev.Health.OpenFor)

	require.NoError(t, b.Forget(ctx, "wh_1"))
	hs, err := b.Read(ctx, *now, "wh_1")
	require.NoError(t, err)
	require.Equal(t, types.Health{WebhookID: "wh_1", State: types.CircuitClosed}, hs["wh_1"])
}

// TestBreakerOff: with BreakAfter < 0 the circuits are closed and Redis is not read, while the count
// still keeps the run of failures, never opening.
func TestBreakerOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, now := newTestBreaker(t, -1)
	for range 10 {
		require.False(t, fail(t, b, "wh_1", "").Opened)
	}
	hs, err := b.Read(ctx, *now, "wh_1")
	require.NoError(t, err)
	require.Equal(t, 10, hs["wh_1"].ConsecutiveFailures)
	require.Equal(t, types.CircuitClosed, hs["wh_1"].State)
	require.Equal(t, []types.Health{{WebhookID: "wh_1", State: types.CircuitClosed}}, b.Circuits(ctx, []string{"wh_1"}))
}

func TestParkedReason(t *testing.T) {
	t.Parallel()
	h := types.Health{ConsecutiveFailures: 5}
	assert.Equal(t, "circuit open after 5 consecutive failed attempts: parked until 2026-01-01T00:00:30Z, retry budget kept",
		ParkedReason(h, circuitAt(30*time.Second)))
}
