package breaker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
	"github.com/stretchr/testify/require"
)

// circuitT0 is the tests' start time, a whole millisecond.
var circuitT0 = time.UnixMilli(1_767_225_600_000)

func circuitAt(d time.Duration) time.Time { return circuitT0.Add(d) }

func newTestCircuits(t *testing.T) (*testRedis, *store) {
	t.Helper()
	tr := newTestRedis(t)
	return tr, newStore(tr.rdb, rdb.KeysOf(tr.prefix, 1))
}

// mustFail records a failure and returns the circuit after it and whether it opened.
func mustFailCircuit(t *testing.T, s *store, id string, now time.Time, token string, breakAfter int, breakFor time.Duration) (types.Health, bool) {
	t.Helper()
	h, opened, err := s.recordFailure(context.Background(), id, now, token, breakAfter, breakFor)
	require.NoError(t, err)
	return h, opened
}

func mustReadCircuit(t *testing.T, s *store, now time.Time, id string) types.Health {
	t.Helper()
	hs, err := s.read(context.Background(), now, id)
	require.NoError(t, err)
	return hs[id]
}

func requireCircuitClosed(t *testing.T, h types.Health) {
	t.Helper()
	require.Equal(t, types.CircuitClosed, h.State)
	require.Zero(t, h.ConsecutiveFailures)
	require.True(t, h.FailingSince.IsZero() && h.OpenUntil.IsZero(), "%+v", h)
	require.Zero(t, h.OpenFor)
}

func TestCircuitOpensAfterBreakAfter(t *testing.T) {
	t.Parallel()
	for _, breakAfter := range []int{1, 2, 5} {
		t.Run(fmt.Sprint(breakAfter), func(t *testing.T) {
			t.Parallel()
			_, s := newTestCircuits(t)
			now := circuitT0
			// breakAfter-1 failures, a success, breakAfter-1 failures again: the success reset the count.
			for round := range 2 {
				for i := 1; i < breakAfter; i++ {
					now = now.Add(time.Second)
					h, opened := mustFailCircuit(t, s, "wh_1", now, "", breakAfter, 30*time.Second)
					require.False(t, opened)
					require.Equal(t, types.CircuitClosed, h.State)
					require.Equal(t, i, h.ConsecutiveFailures)
				}
				if round == 0 {
					_, err := s.recordSuccess(context.Background(), "wh_1", now)
					require.NoError(t, err)
				}
			}
			now = now.Add(time.Second) // sent after the success's answer
			h, opened := mustFailCircuit(t, s, "wh_1", now, "", breakAfter, 30*time.Second)
			require.True(t, opened, "failure %d of %d opens", breakAfter, breakAfter)
			require.Equal(t, types.CircuitOpen, h.State)
			require.Equal(t, breakAfter, h.ConsecutiveFailures)
			require.Equal(t, now.Add(30*time.Second).UnixMilli(), h.OpenUntil.UnixMilli())
			require.Equal(t, 30*time.Second, h.OpenFor)
			require.Equal(t, h, mustReadCircuit(t, s, now, "wh_1"))
			require.Equal(t, types.CircuitClosed, mustReadCircuit(t, s, now, "wh_other").State)
		})
	}
}

func TestCircuitProbeIsExclusive(t *testing.T) {
	t.Parallel()
	tr, s := newTestCircuits(t)
	ctx := context.Background()
	_, opened := mustFailCircuit(t, s, "wh_1", circuitT0, "", 1, 30*time.Second)
	require.True(t, opened)

	ok, h, err := s.acquireProbe(ctx, "wh_1", circuitAt(30*time.Second-time.Millisecond), "early", 10*time.Second)
	require.NoError(t, err)
	require.False(t, ok, "no probe before OpenUntil")
	require.Equal(t, types.CircuitOpen, h.State)

	var wins, errs atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 8 {
		rs := &store{rdb: tr.newClient(t), key: s.key, hourly: s.hourly}
		require.NoError(t, rs.rdb.Ping(ctx).Err()) // connected before the race
		wg.Go(func() {
			<-start
			ok, _, err := rs.acquireProbe(ctx, "wh_1", circuitAt(30*time.Second), fmt.Sprint("p", i), 10*time.Second)
			if err != nil {
				errs.Add(1)
			}
			if ok {
				wins.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	require.Zero(t, errs.Load())
	require.EqualValues(t, 1, wins.Load(), "exactly one of 8 concurrent acquirers gets the probe")
	require.Equal(t, types.CircuitProbing, mustReadCircuit(t, s, circuitAt(35*time.Second), "wh_1").State)

	ok, h, err = s.acquireProbe(ctx, "wh_1", circuitAt(40*time.Second-time.Millisecond), "second", 10*time.Second)
	require.NoError(t, err)
	require.False(t, ok, "the probe is held")
	require.Equal(t, types.CircuitProbing, h.State)

	ok, h, err = s.acquireProbe(ctx, "wh_1", circuitAt(40*time.Second), "third", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the hold has passed")
	require.Equal(t, types.CircuitProbing, h.State)
	require.Equal(t, types.CircuitOpen, mustReadCircuit(t, s, circuitAt(50*time.Second), "wh_1").State, "the hold ended")
}

func TestCircuitAcquireProbeRefusals(t *testing.T) {
	t.Parallel()
	_, s := newTestCircuits(t)
	ctx := context.Background()
	ok, h, err := s.acquireProbe(ctx, "wh_1", circuitT0, "p", time.Second)
	require.NoError(t, err)
	require.False(t, ok, "a closed circuit has no probe")
	requireCircuitClosed(t, h)
	mustFailCircuit(t, s, "wh_1", circuitT0, "", 2, time.Second)
	ok, h, err = s.acquireProbe(ctx, "wh_1", circuitAt(time.Hour), "p", time.Second)
	require.NoError(t, err)
	require.False(t, ok, "a failing but closed circuit has no probe")
	require.Equal(t, 1, h.ConsecutiveFailures)
	_, _, err = s.acquireProbe(ctx, "wh_1", circuitAt(time.Hour), "", time.Second)
	require.ErrorContains(t, err, "empty probe token")
}

func TestCircuitProbeFailureDoublesOpenPeriod(t *testing.T) {
	t.Parallel()
	_, s := newTestCircuits(t)
	ctx := context.Background()
	h, _ := mustFailCircuit(t, s, "wh_1", circuitT0, "", 1, 30*time.Second)
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute} {
		now, token := h.OpenUntil, fmt.Sprint("probe-", i)
		ok, _, err := s.acquireProbe(ctx, "wh_1", now, token, 5*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		now = now.Add(2 * time.Second)
		var opened bool
		h, opened = mustFailCircuit(t, s, "wh_1", now, token, 1, 30*time.Second)
		require.True(t, opened, "the probe's failure reopens")
		require.Equal(t, types.CircuitOpen, h.State)
		require.Equal(t, want, h.OpenFor)
		require.Equal(t, now.Add(want).UnixMilli(), h.OpenUntil.UnixMilli())
		require.Equal(t, i+2, h.ConsecutiveFailures)
	}
}

func TestCircuitFailureWhileOpenOnlyCounts(t *testing.T) {
	t.Parallel()
	_, s := newTestCircuits(t)
	ctx := context.Background()
	opening, _ := mustFailCircuit(t, s, "wh_1", circuitT0, "", 1, 30*time.Second)
	ok, _, err := s.acquireProbe(ctx, "wh_1", circuitAt(30*time.Second), "probe", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	for i, c := range []struct {
		at    time.Duration
		token string
	}{
		{time.Second, ""},           // in flight when it opened
		{31 * time.Second, ""},      // while the probe is out
		{32 * time.Second, "other"}, // a token that is not the probe's
		{2 * time.Minute, ""},       // after the hold, no probe out
	} {
		h, opened := mustFailCircuit(t, s, "wh_1", circuitAt(c.at), c.token, 1, 30*time.Second)
		require.False(t, opened, "case %d", i)
		require.Equal(t, opening.OpenUntil, h.OpenUntil, "case %d", i)
		require.Equal(t, opening.OpenFor, h.OpenFor, "case %d", i)
		require.Equal(t, i+2, h.ConsecutiveFailures, "case %d: it counts", i)
	}
	// A probe token whose hold passed and which another caller replaced is not the probe's any more.
	ok, _, err = s.acquireProbe(ctx, "wh_1", circuitAt(3*time.Minute), "probe-2", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	h, opened := mustFailCircuit(t, s, "wh_1", circuitAt(3*time.Minute+time.Second), "probe", 1, 30*time.Second)
	require.False(t, opened, "a replaced probe's failure only counts")
	require.Equal(t, opening.OpenUntil, h.OpenUntil)
	h, opened = mustFailCircuit(t, s, "wh_1", circuitAt(3*time.Minute+2*time.Second), "probe-2", 1, 30*time.Second)
	require.True(t, opened)
	require.Equal(t, time.Minute, h.OpenFor)
}

func TestCircuitProbeSuccessCloses(t *testing.T) {
	t.Parallel()
	_, s := newTestCircuits(t)
	ctx := context.Background()
	mustFailCircuit(t, s, "wh_1", circuitT0, "", 2, 30*time.Second)
	wasOpen, err := s.recordSuccess(ctx, "wh_1", circuitAt(time.Millisecond))
	require.NoError(t, err)
	require.False(t, wasOpen, "failing but closed")

	mustFailCircuit(t, s, "wh_1", circuitAt(2*time.Millisecond), "", 1, 30*time.Second)
	ok, _, err := s.acquireProbe(ctx, "wh_1", circuitAt(31*time.Second), "probe", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	wasOpen, err = s.recordSuccess(ctx, "wh_1", circuitAt(31*time.Second))
	require.NoError(t, err)
	require.True(t, wasOpen)
	requireCircuitClosed(t, mustReadCircuit(t, s, circuitAt(32*time.Second), "wh_1"))
	wasOpen, err = s.recordSuccess(ctx, "wh_1", circuitAt(2*time.Minute)) // rdb.CircuitQuiet after the last failure
	require.NoError(t, err)
	require.False(t, wasOpen)
	n, err := s.rdb.HLen(ctx, s.key).Result()
	require.NoError(t, err)
	require.Zero(t, n, "a closed circuit leaves no field")
}

// TestCircuitCreatedAfterAnotherReplicasSuccess: a success one replica counted while the webhook had no
// circuit still drops the failures sent before its answer that another replica counts after it (they
// create the circuit), in one count or one by one; failures sent after its answer count, and open it.
// Also once a circuit was deleted (a success CircuitQuiet after the last failure).
func TestCircuitCreatedAfterAnotherReplicasSuccess(t *testing.T) {
	t.Parallel()
	const breakAfter = 5
	failures := func(from time.Duration) []Outcome { // sent 1 ms apart from from, each answered 10 ms later
		var outs []Outcome
		for i := range breakAfter {
			sent := circuitAt(from + time.Duration(i)*time.Millisecond)
			outs = append(outs, Outcome{WebhookID: "wh_1", Kind: rdb.CountFailure, Sent: sent, Answered: sent.Add(10 * time.Millisecond)})
		}
		return outs
	}
	for _, tc := range []struct {
		name       string
		deleted    bool // a circuit existed, and a success deleted it
		oneByOne   bool
		successAt  time.Duration // the other replica's success's answer
		failedFrom time.Duration // the failures' first send
		opens      bool
	}{
		{"sent before the success's answer, one count", false, false, 10 * time.Millisecond, 0, false},
		{"sent before the success's answer, one by one", false, true, 10 * time.Millisecond, 0, false},
		{"the last sent at the success's answer", false, true, 10 * time.Millisecond, 6 * time.Millisecond, false},
		{"sent after the success's answer", false, true, 10 * time.Millisecond, 11 * time.Millisecond, true},
		{"after a deleted circuit, sent before", true, true, 3 * time.Minute, 3*time.Minute - 10*time.Millisecond, false},
		{"after a deleted circuit, sent after", true, true, 3 * time.Minute, 3*time.Minute + time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, s := newTestCircuits(t)
			ctx := context.Background()
			if tc.deleted {
				mustFailCircuit(t, s, "wh_1", circuitT0, "", breakAfter, time.Minute)
			}
			_, err := s.recordSuccess(ctx, "wh_1", circuitAt(tc.successAt))
			require.NoError(t, err)
			n, err := s.rdb.HLen(ctx, s.key).Result()
			require.NoError(t, err)
			require.Zero(t, n, "no circuit stored before the failures")
			outs := failures(tc.failedFrom)
			var evs []Event
			if tc.oneByOne {
				for _, o := range outs {
					ev, err := s.count(ctx, o.Answered, breakAfter, time.Minute, o)
					require.NoError(t, err)
					evs = append(evs, ev...)
				}
			} else {
				evs, err = s.count(ctx, outs[len(outs)-1].Answered, breakAfter, time.Minute, outs...)
				require.NoError(t, err)
			}
			opened := 0
			for _, ev := range evs {
				if ev.Opened {
					opened++
				}
			}
			last := evs[len(evs)-1].Health
			if tc.opens {
				require.Equal(t, 1, opened)
				require.Equal(t, types.CircuitOpen, last.State)
				return
			}
			require.Zero(t, opened)
			require.Equal(t, types.CircuitClosed, last.State)
			require.Less(t, last.ConsecutiveFailures, breakAfter)
		})
	}
}

func TestCircuitFailingSince(t *testing.T) {
	t.Parallel()
	_, s := newTestCircuits(t)
	ctx := context.Background()
	for _, d := range []time.Duration{0, time.Second, time.Minute} { // the third opens
		h, _ := mustFailCircuit(t, s, "wh_1", circuitAt(d), "", 3, 30*time.Second)
		require.Equal(t, circuitT0.UnixMilli(), h.FailingSince.UnixMilli())
	}
	ok, _, err := s.acquireProbe(ctx, "wh_1", circuitAt(2*time.Minute), "probe", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	h, _ := mustFailCircuit(t, s, "wh_1", circuitAt(2*time.Minute), "probe", 3, 30*time.Second)
	require.Equal(t, circuitT0.UnixMilli(), h.FailingSince.UnixMilli(), "a reopening keeps the start of the run")
	require.Equal(t, circuitT0.UnixMilli(), mustReadCircuit(t, s, circuitAt(time.Hour), "wh_1").FailingSince.UnixMilli())

	_, err = s.recordSuccess(ctx, "wh_1", circuitAt(time.Hour-time.Millisecond))
	require.NoError(t, err)
	h, _ = mustFailCircuit(t, s, "wh_1", circuitAt(time.Hour), "", 3, 30*time.Second)
	require.Equal(t, circuitAt(time.Hour).UnixMilli(), h.FailingSince.UnixMilli(), "a success ends the run")
}

func TestCircuitForget(t *testing.T) {
	t.Parallel()
	_, s := newTestCircuits(t)
	ctx := context.Background()
	mustFailCircuit(t, s, "wh_1", circuitT0, "", 1, time.Minute)
	mustFailCircuit(t, s, "wh_2", circuitT0, "", 3, time.Minute)
	require.NoError(t, s.forget(ctx, "wh_1"))
	hs, err := s.read(ctx, circuitT0, "wh_1", "wh_2")
	require.NoError(t, err)
	requireCircuitClosed(t, hs["wh_1"])
	require.Equal(t, 1, hs["wh_2"].ConsecutiveFailures)
	hs, err = s.read(ctx, circuitT0)
	require.NoError(t, err)
	require.Empty(t, hs)
}

// TestCircuitCorruptValueIsClosed: Go and the scripts agree on what is corrupt (read as closed with no
// failures, replaced by the next failure) and on what a valid value holds.
func TestCircuitCorruptValueIsClosed(t *testing.T) {
	t.Parallel()
	_, s := newTestCircuits(t)
	ctx := context.Background()
	for i, c := range []struct {
		stored   string
		failures int // as read: 0 when corrupt
	}{
		{"", 0}, {"x", 0}, {"1:2:3:4:5", 0}, {"1:2:3:4:5:6:7", 0}, {"-1:0:0:0:0:0:0::", 0}, {"+1:0:0:0:0:0:0::", 0},
		{" 1:0:0:0:0:0:0::", 0}, {"1_0:0:0:0:0:0:0::", 0}, {"1234567890123456:0:0:0:0:0:0::", 0},
		{"1:0:0:0:0x1:0:0::", 0}, {"1::0:0:0:0:0::", 0}, {"٣:0:0:0:0:0:0::", 0}, {"1:0:0:0:0:0:0:,5:", 0},
		{"1:0:0:0:0:0:0:5,,6:", 0}, {"1:0:0:0:0:0:0:5,:", 0}, {"1:0:0:0:0:0:0:x:", 0},
		{"1:0:0:0:0:0:0:1234567890123456:", 0}, {"1:0:0:0:0:0:0:" + strings.Repeat("1,", rdb.MaxBreakAfter) + "1:", 0},
		{"1:0:0:0:0:0:0:" + strings.Repeat("1,", rdb.MaxBreakAfter-1) + "1:", 1},
		{"007:0:0:0:0:0:0::", 7}, {"123456789012345:0:0:0:0:0:0::", 123456789012345},
		{"2:0:0:0:0:0:0:5,6:tok:en\x00\n", 2},
	} {
		id := fmt.Sprint("wh_", i)
		require.NoError(t, s.rdb.HSet(ctx, s.key, id, c.stored).Err())
		h := mustReadCircuit(t, s, circuitT0, id)
		require.Equal(t, c.failures, h.ConsecutiveFailures, "%q", c.stored)
		require.Equal(t, types.CircuitClosed, h.State, "%q", c.stored)
		ok, _, err := s.acquireProbe(ctx, id, circuitT0, "p", time.Second)
		require.NoError(t, err, "%q", c.stored)
		require.False(t, ok, "%q", c.stored)
		h, _ = mustFailCircuit(t, s, id, circuitT0, "", 1<<30, time.Second)
		require.Equal(t, c.failures+1, h.ConsecutiveFailures, "the script reads %q as Go does", c.stored)
	}
}
