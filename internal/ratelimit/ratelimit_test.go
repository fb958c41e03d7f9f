package ratelimit

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// takeTimed calls Take and reports the client's clock just before and just after the call:
// the server ran the script in between.
func takeTimed(t *testing.T, tr *testRedis, key string, perSecond, want int, horizon time.Duration) (delays []time.Duration, retryIn time.Duration, before, after time.Time) {
	t.Helper()
	before = time.Now()
	delays, retryIn, err := Take(context.Background(), tr.rdb, key, perSecond, want, horizon)
	after = time.Now()
	require.NoError(t, err)
	return delays, retryIn, before, after
}

// requireDelayAfter checks that got, a delay taken by a call in [before2, after2], is what is left of
// want, a delay taken by an earlier call in [before1, after1] (within a millisecond).
func requireDelayAfter(t *testing.T, got, want time.Duration, before1, after1, before2, after2 time.Time) {
	t.Helper()
	require.GreaterOrEqual(t, got, want-after2.Sub(before1)-time.Millisecond)
	require.LessOrEqual(t, got, want-before2.Sub(after1)+time.Millisecond)
}

func TestRateLimitSlotsSpacedExactly(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	key := tr.key

	d1, retry, b1, a1 := takeTimed(t, tr, key, 50, 10, time.Second)
	require.Len(t, d1, 10)
	require.Zero(t, retry)
	require.Zero(t, d1[0], "an idle limiter grants its first slot now")
	for i := 1; i < len(d1); i++ {
		require.Equal(t, 20*time.Millisecond, d1[i]-d1[i-1], "slot %d", i)
	}

	d2, _, b2, a2 := takeTimed(t, tr, key, 50, 10, time.Second)
	require.Len(t, d2, 10)
	requireDelayAfter(t, d2[0], d1[9]+20*time.Millisecond, b1, a1, b2, a2)
	for i := 1; i < len(d2); i++ {
		require.Equal(t, 20*time.Millisecond, d2[i]-d2[i-1], "slot %d", i)
	}
}

func TestRateLimitHorizonBoundsGrant(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	key := tr.key

	// One slot a second and a horizon of 2.5 s: the second call finds the next slot (at 3 s) beyond its
	// horizon unless half a second passes between the calls.
	d1, _, b1, a1 := takeTimed(t, tr, key, 1, 100, 2500*time.Millisecond)
	require.Equal(t, []time.Duration{0, time.Second, 2 * time.Second}, d1)

	d2, retry, b2, a2 := takeTimed(t, tr, key, 1, 100, 2500*time.Millisecond)
	require.Empty(t, d2, "the next slot starts beyond the horizon")
	requireDelayAfter(t, retry, 3*time.Second, b1, a1, b2, a2)
}

func TestRateLimitSharedAcrossClients(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	key := tr.key
	const perSecond, interval, horizon = 50, 20 * time.Millisecond, 100 * time.Millisecond

	// A slot's true start lies in [lo, hi]: the call's start and end plus the slot's delay.
	type slot struct{ lo, hi time.Time }
	var (
		mu    sync.Mutex
		slots []slot
		wg    sync.WaitGroup
	)
	const want = 75 // 1.5 s at 50 per second
	var taken atomic.Int32
	start := time.Now()
	for range 3 {
		rdb := tr.newClient(t)
		wg.Go(func() {
			for i := 0; i < 2000 && taken.Load() < want && time.Since(start) < 30*time.Second; i++ {
				before := time.Now()
				delays, retryIn, err := Take(context.Background(), rdb, key, perSecond, 3, horizon)
				after := time.Now()
				if !assertNoError(t, err) {
					return
				}
				mu.Lock()
				for _, d := range delays {
					slots = append(slots, slot{before.Add(d), after.Add(d)})
				}
				mu.Unlock()
				taken.Add(int32(len(delays)))
				if len(delays) == 0 {
					time.Sleep(min(retryIn-horizon+time.Millisecond, 5*time.Millisecond))
				}
			}
		})
	}
	wg.Wait()

	mid := func(s slot) time.Time { return s.lo.Add(s.hi.Sub(s.lo) / 2) }
	sort.Slice(slots, func(i, j int) bool { return mid(slots[i]).Before(mid(slots[j])) })
	require.GreaterOrEqual(t, len(slots), want)
	for i := 1; i < len(slots); i++ {
		// The largest gap the two slots can have is still at least an interval (less a millisecond).
		gap := slots[i].hi.Sub(slots[i-1].lo)
		require.GreaterOrEqual(t, gap, interval-time.Millisecond, "slots %d and %d", i-1, i)
	}
	// The slots certainly in the second from each slot's earliest start: a call slowed by a loaded
	// machine widens its slots' spans, which makes this count smaller, never larger.
	for i := range slots {
		n := 0
		for _, s := range slots {
			if !s.lo.Before(slots[i].lo) && s.hi.Before(slots[i].lo.Add(time.Second)) {
				n++
			}
		}
		require.LessOrEqual(t, n, perSecond, "second from slot %d", i)
	}
}

// assertNoError reports err to t from a goroutine other than the test's.
func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Errorf("take rate slots: %v", err)
		return false
	}
	return true
}

func TestRateLimitKeyExpires(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	key := tr.key
	const horizon = 100 * time.Millisecond

	delays, _, _, _ := takeTimed(t, tr, key, 50, 10, horizon)
	require.Len(t, delays, 6, "slots at 0, 20, ..., 100 ms")
	ttl, err := tr.rdb.PTTL(context.Background(), key).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, time.Duration(0))
	require.LessOrEqual(t, ttl, time.Second+horizon+20*time.Millisecond, "a second after the last slot's end")
	if tr.mini != nil {
		tr.mini.FastForward(ttl)
		require.False(t, tr.mini.Exists(key), "an idle limiter leaves nothing behind")
	}
}

func TestRateLimitRefusesInvalidArguments(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	key := tr.key
	for _, c := range []struct {
		perSecond, want int
		horizon         time.Duration
	}{{0, 1, 0}, {-1, 1, time.Second}, {10, 0, time.Second}, {10, -1, time.Second}, {10, 1, -time.Millisecond}} {
		delays, retryIn, err := Take(context.Background(), tr.rdb, key, c.perSecond, c.want, c.horizon)
		require.ErrorIs(t, err, ErrInvalidArgs, "%+v", c)
		require.Nil(t, delays)
		require.Zero(t, retryIn)
	}
	n, err := tr.rdb.Exists(context.Background(), key).Result()
	require.NoError(t, err)
	require.Zero(t, n, "a refused call writes nothing")
}
