package webhooks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// encode is the stored form of c, as the scripts write it.
func (c circuit) encode() string {
	fails := make([]string, len(c.fails))
	for i, f := range c.fails {
		fails[i] = strconv.FormatInt(f, 10)
	}
	return fmt.Sprintf("%d:%d:%d:%d:%d:%d:%d:%s:%s", c.failures, c.since, c.openUntil, c.openFor, c.probeUntil,
		c.lastOK, c.lastFailed, strings.Join(fails, ","), c.token)
}

// circuitT0 is the tests' start time, a whole millisecond.
var circuitT0 = time.UnixMilli(1_767_225_600_000)

func circuitAt(d time.Duration) time.Time { return circuitT0.Add(d) }

func newTestCircuits(t *testing.T) (*testRedis, *circuitStore) {
	t.Helper()
	tr := newTestRedis(t)
	return tr, newCircuitStore(tr.rdb, newKeyspace(tr.prefix))
}

// mustFail records a failure and returns the circuit after it and whether it opened.
func mustFailCircuit(t *testing.T, s *circuitStore, id string, now time.Time, token string, breakAfter int, breakFor time.Duration) (Health, bool) {
	t.Helper()
	h, opened, err := s.recordFailure(context.Background(), id, now, token, breakAfter, breakFor)
	require.NoError(t, err)
	return h, opened
}

func mustReadCircuit(t *testing.T, s *circuitStore, now time.Time, id string) Health {
	t.Helper()
	hs, err := s.read(context.Background(), now, id)
	require.NoError(t, err)
	return hs[id]
}

func requireCircuitClosed(t *testing.T, h Health) {
	t.Helper()
	require.Equal(t, CircuitClosed, h.State)
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
					require.Equal(t, CircuitClosed, h.State)
					require.Equal(t, i, h.ConsecutiveFailures)
				}
				if round == 0 {
					_, err := s.recordSuccess(context.Background(), "wh_1")
					require.NoError(t, err)
				}
			}
			h, opened := mustFailCircuit(t, s, "wh_1", now, "", breakAfter, 30*time.Second)
			require.True(t, opened, "failure %d of %d opens", breakAfter, breakAfter)
			require.Equal(t, CircuitOpen, h.State)
			require.Equal(t, breakAfter, h.ConsecutiveFailures)
			require.Equal(t, now.Add(30*time.Second).UnixMilli(), h.OpenUntil.UnixMilli())
			require.Equal(t, 30*time.Second, h.OpenFor)
			require.Equal(t, h, mustReadCircuit(t, s, now, "wh_1"))
			require.Equal(t, CircuitClosed, mustReadCircuit(t, s, now, "wh_other").State)
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
	require.Equal(t, CircuitOpen, h.State)

	var wins, errs atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 8 {
		rs := &circuitStore{rdb: tr.newClient(t), key: s.key, hourly: s.hourly}
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
	require.Equal(t, CircuitProbing, mustReadCircuit(t, s, circuitAt(35*time.Second), "wh_1").State)

	ok, h, err = s.acquireProbe(ctx, "wh_1", circuitAt(40*time.Second-time.Millisecond), "second", 10*time.Second)
	require.NoError(t, err)
	require.False(t, ok, "the probe is held")
	require.Equal(t, CircuitProbing, h.State)

	ok, h, err = s.acquireProbe(ctx, "wh_1", circuitAt(40*time.Second), "third", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the hold has passed")
	require.Equal(t, CircuitProbing, h.State)
	require.Equal(t, CircuitOpen, mustReadCircuit(t, s, circuitAt(50*time.Second), "wh_1").State, "the hold ended")
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
		require.Equal(t, CircuitOpen, h.State)
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
	wasOpen, err := s.recordSuccess(ctx, "wh_1")
	require.NoError(t, err)
	require.False(t, wasOpen, "failing but closed")

	mustFailCircuit(t, s, "wh_1", circuitT0, "", 1, 30*time.Second)
	ok, _, err := s.acquireProbe(ctx, "wh_1", circuitAt(30*time.Second), "probe", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	wasOpen, err = s.recordSuccess(ctx, "wh_1")
	require.NoError(t, err)
	require.True(t, wasOpen)
	requireCircuitClosed(t, mustReadCircuit(t, s, circuitAt(31*time.Second), "wh_1"))
	wasOpen, err = s.recordSuccess(ctx, "wh_1")
	require.NoError(t, err)
	require.False(t, wasOpen)
	n, err := s.rdb.HLen(ctx, s.key).Result()
	require.NoError(t, err)
	require.Zero(t, n, "a closed circuit leaves no field")
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

	_, err = s.recordSuccess(ctx, "wh_1")
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
		{"1:0:0:0:0:0:0:1234567890123456:", 0}, {"1:0:0:0:0:0:0:" + strings.Repeat("1,", MaxBreakAfter) + "1:", 0},
		{"1:0:0:0:0:0:0:" + strings.Repeat("1,", MaxBreakAfter-1) + "1:", 1},
		{"007:0:0:0:0:0:0::", 7}, {"123456789012345:0:0:0:0:0:0::", 123456789012345},
		{"2:0:0:0:0:0:0:5,6:tok:en\x00\n", 2},
	} {
		id := fmt.Sprint("wh_", i)
		require.NoError(t, s.rdb.HSet(ctx, s.key, id, c.stored).Err())
		h := mustReadCircuit(t, s, circuitT0, id)
		require.Equal(t, c.failures, h.ConsecutiveFailures, "%q", c.stored)
		require.Equal(t, CircuitClosed, h.State, "%q", c.stored)
		ok, _, err := s.acquireProbe(ctx, id, circuitT0, "p", time.Second)
		require.NoError(t, err, "%q", c.stored)
		require.False(t, ok, "%q", c.stored)
		h, _ = mustFailCircuit(t, s, id, circuitT0, "", 1<<30, time.Second)
		require.Equal(t, c.failures+1, h.ConsecutiveFailures, "the script reads %q as Go does", c.stored)
	}
}

// hmgetHook counts HMGETs, and runs a function before each.
type hmgetHook struct {
	passHook
	n      *atomic.Int32
	before func()
}

func (h hmgetHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "hmget" {
			h.n.Add(1)
			if h.before != nil {
				h.before()
			}
		}
		return next(ctx, cmd)
	}
}

func TestCircuitCache(t *testing.T) {
	t.Parallel()
	tr, s := newTestCircuits(t)
	ctx := context.Background()
	var hmgets atomic.Int32
	var during func()
	rdb := tr.newClient(t)
	rdb.AddHook(hmgetHook{n: &hmgets, before: func() {
		if during != nil {
			during()
		}
	}})
	s.rdb = rdb
	cache := newCircuitCache()
	get := func(now time.Time, ids ...string) map[string]Health {
		t.Helper()
		hs, err := cache.get(ctx, s, now, ids)
		require.NoError(t, err)
		require.Len(t, hs, len(ids))
		return hs
	}

	require.Equal(t, CircuitClosed, get(circuitT0, "wh_1", "wh_2")["wh_1"].State)
	require.EqualValues(t, 1, hmgets.Load(), "one HMGET for both")
	failing := circuit{failures: 7, since: circuitT0.UnixMilli()}.encode()
	require.NoError(t, rdb.HSet(ctx, s.key, "wh_1", failing, "wh_2", failing).Err())
	hs := get(circuitAt(circuitCacheTTL-time.Millisecond), "wh_1", "wh_2")
	require.Zero(t, hs["wh_1"].ConsecutiveFailures, "cached")
	require.EqualValues(t, 1, hmgets.Load(), "no HMGET within the TTL")

	hs = get(circuitAt(circuitCacheTTL), "wh_1", "wh_3")
	require.Equal(t, 7, hs["wh_1"].ConsecutiveFailures, "read again after the TTL")
	require.EqualValues(t, 2, hmgets.Load())
	require.Zero(t, get(circuitAt(circuitCacheTTL+time.Millisecond), "wh_3")["wh_3"].ConsecutiveFailures)
	require.EqualValues(t, 2, hmgets.Load(), "wh_3 cached by the read before")

	// A put is seen at once, and a read that overlaps a put does not replace it.
	open := Health{WebhookID: "wh_1", State: CircuitOpen, ConsecutiveFailures: 8}
	cache.put(open, circuitAt(time.Second))
	require.Equal(t, open, get(circuitAt(time.Second), "wh_1")["wh_1"])
	during = func() { cache.put(open, circuitAt(2*time.Second)) }
	require.Equal(t, open, get(circuitAt(2*time.Second), "wh_1")["wh_1"])
	during = nil
	require.Equal(t, open, get(circuitAt(2*time.Second+time.Millisecond), "wh_1")["wh_1"])
	require.Equal(t, 7, get(circuitAt(3*time.Second), "wh_1")["wh_1"].ConsecutiveFailures, "Redis after the TTL")
}

func TestCircuitCacheConcurrent(t *testing.T) {
	t.Parallel()
	_, s := newTestCircuits(t)
	cache := newCircuitCache()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				now := circuitAt(time.Duration(j) * 100 * time.Millisecond)
				if i%2 == 0 {
					cache.put(Health{WebhookID: fmt.Sprint("wh_", j%4), State: CircuitOpen}, now)
					continue
				}
				_, err := cache.get(context.Background(), s, now, []string{"wh_0", "wh_1", "wh_2", "wh_3"})
				require.NoError(t, err)
			}
		})
	}
	wg.Wait()
}

// FuzzCircuitDecode: decoding never panics; what it accepts re-encodes to the same circuit; every circuit
// of valid fields round-trips through encode and decode.
func FuzzCircuitDecode(f *testing.F) {
	for _, s := range []string{"", "0:0:0:0:0:0:0::", "3:1767225600000:1767225630000:30000:0:1767225500000:1767225600000:1767225600000,1767225600001:",
		"1:2:3:4:5:6:7:8:tok:en", "1:2:3:4:5", "-1:0:0:0:0:0:0::", "9999999999999999:0:0:0:0:0:0::", "1:0:0:0:0:0:0:5,,6:"} {
		f.Add(s, int64(3), int64(1767225600000), int64(1767225630000), int64(30000), int64(0), "tok")
	}
	f.Fuzz(func(t *testing.T, s string, a, b, c, d, e int64, token string) {
		if got, ok := decodeCircuit(s); ok {
			again, ok := decodeCircuit(got.encode())
			require.True(t, ok, "%q", s)
			require.Equal(t, got, again)
		} else {
			require.Equal(t, circuit{}, got)
		}
		field := func(n int64) int64 { return max(n, -n, 0) % 1_000_000_000_000_000 }
		want := circuit{failures: field(a), since: field(b), openUntil: field(c), openFor: field(d), probeUntil: field(e),
			lastOK: field(e + a), lastFailed: field(b - c), fails: []int64{field(d), field(a)}, token: token}
		got, ok := decodeCircuit(want.encode())
		require.True(t, ok, "%q", want.encode())
		require.Equal(t, want, got)
	})
}
