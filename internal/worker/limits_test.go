package worker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: time.Now()} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestInFlightCapTracksHealth: a webhook's limit starts at the in-flight floor (Concurrency/4 in a Dispatcher); a fast success
// (within Timeout/4) raises it by one while the webhook has held at least half of it since it last
// changed; a slow success or a failure lowers it by a tenth (at least one), never below the floor; a
// webhook holding attempts that frees no slot for Timeout/2 drops to the floor at once.
func TestInFlightCapTracksHealth(t *testing.T) {
	t.Parallel()
	const slow = 500 * time.Millisecond
	clock := newTestClock()
	f := NewInFlight(4, 4*slow, clock.Now) // Timeout 2s: fast within 500ms, stalled after 1s
	require.Equal(t, slow, f.fast)
	require.Equal(t, 2*slow, f.stall)
	require.Equal(t, 4*slow, f.maxWait)
	type step struct {
		name    string
		do      func()
		room    int
		holding int
	}
	fast := func() { f.Observe("w", true, slow-time.Millisecond) }
	slowOK := func() { f.Observe("w", true, slow) }
	failed := func() { f.Observe("w", false, time.Millisecond) }
	take := func(n int) func() { return func() { require.Equal(t, n, f.Take("w", n)) } }
	release := func(n int) func() {
		return func() {
			for range n {
				f.Release("w")
			}
		}
	}
	for _, s := range []step{
		{"unknown: the floor", func() {}, 4, 0},
		{"the floor taken", func() { require.Equal(t, 4, f.Take("w", 100)); require.Zero(t, f.Take("w", 1)) }, 0, 4},
		{"a fast success while busy raises it", fast, 1, 4},
		{"and again: 4 of 5 held is busy", fast, 2, 4},
		{"slots freed", release(4), 6, 0},
		{"busy since the last change: raised", fast, 7, 0},
		{"not busy since: not raised", fast, 7, 0},
		{"3 of 7 held is not busy", take(3), 4, 3},
		{"still not raised", fast, 4, 3},
		{"4 of 7 is busy", take(1), 3, 4},
		{"raised", fast, 4, 4},
		{"a slow success lowers it", slowOK, 3, 4},
		{"a failure lowers it", failed, 2, 4},
		{"failures stop at the floor", func() { failed(); failed(); failed() }, 0, 4},
		{"a fast success while busy", fast, 1, 4},
		{"Timeout/2 less a tick with no slot freed: not stalled", func() { clock.Advance(2*slow - time.Millisecond) }, 1, 4},
		{"stalled: the floor at once", func() { clock.Advance(time.Millisecond) }, 0, 4},
		{"a slot freed", release(1), 1, 3},
		{"all freed", release(3), 4, 0},
	} {
		s.do()
		assert.Equal(t, s.room, f.Room("w"), s.name)
		f.mu.Lock()
		held := 0
		if w := f.hooks["w"]; w != nil {
			held = w.n
		}
		f.mu.Unlock()
		assert.Equal(t, s.holding, held, s.name)
	}
	f.mu.Lock()
	assert.Empty(t, f.hooks, "a webhook holding nothing, at the floor, is forgotten")
	f.mu.Unlock()
}

// TestInFlightLimitIsBoundedByUse: whatever the order of takes, releases, outcomes and stalls, a
// webhook's limit stays within [cap, FastInFlightFactor × cap] and at most twice the most attempts it
// has held at once, plus one; no take goes past the limit; an entry is forgotten only when it holds
// nothing. (Random operations, seeded.)
func TestInFlightLimitIsBoundedByUse(t *testing.T) {
	t.Parallel()
	for _, capacity := range []int{1, 3, 16} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			t.Parallel()
			const slow = 100 * time.Millisecond
			clock := newTestClock()
			f := NewInFlight(capacity, 4*slow, clock.Now)
			rng := rand.New(rand.NewPCG(uint64(capacity), 20))
			peak, held, grew := 0, 0, false
			for i := range 20_000 {
				switch op := rng.IntN(10); {
				case op < 3:
					got := f.Take("w", 1+rng.IntN(2*capacity))
					held += got
					if got > 0 {
						f.mu.Lock()
						require.LessOrEqual(t, f.hooks["w"].n, f.hooks["w"].limit, "step %d: a take stays within the limit", i)
						f.mu.Unlock()
					}
				case op < 6 && held > 0:
					f.Release("w")
					held--
				case op < 9:
					ok := rng.IntN(20) > 0
					took := time.Duration(rng.IntN(int(slow * 5 / 4)))
					f.Observe("w", ok, took)
				default:
					clock.Advance(time.Duration(rng.IntN(int(slow))))
				}
				peak = max(peak, held)
				f.mu.Lock()
				if w := f.hooks["w"]; w != nil {
					require.Equal(t, held, w.n, "step %d", i)
					require.GreaterOrEqual(t, w.limit, capacity, "step %d", i)
					require.LessOrEqual(t, w.limit, FastInFlightFactor*capacity, "step %d", i)
					require.LessOrEqual(t, w.limit, max(capacity, 2*peak+1), "step %d: bounded by use", i)
					grew = grew || w.limit > capacity
				} else {
					require.Zero(t, held, "step %d: forgotten only holding nothing", i)
				}
				f.mu.Unlock()
			}
			assert.True(t, grew, "the walk raised the limit")
		})
	}
}

// TestInFlightWaitersAreServedInTurn: callers at the limit get slots first come, first served, as
// the webhook frees them or its limit is raised, for as long as it keeps freeing them (each within
// Timeout/2 of the last), up to Timeout in all since the call began to wait; a caller gives up once the
// webhook is stalled (Timeout/2 with no slot freed), or when its context ends.
func TestInFlightWaitersAreServedInTurn(t *testing.T) {
	t.Parallel()
	const slow = 100 * time.Millisecond
	clock := newTestClock()
	f := NewInFlight(1, 4*slow, clock.Now) // stalled after 200ms, waits 400ms in all
	require.Equal(t, 1, f.Take("w", 1))
	waiting := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.hooks["w"].waiters)
	}
	got := make(chan int, 8)
	ctx, cancel := context.WithCancel(context.Background()) // ends the waits of a test that failed
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range 4 { // queued in this order
		wg.Go(func() {
			if f.Acquire(ctx, "w", clock.Now()) {
				got <- i
			} else {
				got <- -1 - i
			}
		})
		require.Eventually(t, func() bool { return waiting() == i+1 }, 5*time.Second, 10*time.Millisecond, "queued")
	}
	clock.Advance(2 * slow * 9 / 10)
	f.Release("w")
	assert.Equal(t, 0, <-got, "the first queued gets the freed slot")
	clock.Advance(2 * slow * 9 / 10)
	f.Observe("w", true, time.Millisecond) // busy: 1 of 1 held; the limit is raised to 2
	assert.Equal(t, 1, <-got, "the second gets the added slot, more than Timeout/2 after it queued: the webhook progressed")
	clock.Advance(2 * slow / 10) // 380ms after they queued
	f.Release("w")
	assert.Equal(t, 2, <-got, "the third, waiting longer than Timeout/2 while slots were freed")
	clock.Advance(2 * slow / 10) // 400ms: Timeout in all
	assert.Equal(t, -4, <-got, "the fourth gives up after Timeout in all")

	// Stalled: Timeout/2 with no slot freed.
	require.Zero(t, f.Room("w"))
	wg.Go(func() { got <- map[bool]int{true: 1, false: 0}[f.Acquire(ctx, "w", clock.Now())] })
	require.Eventually(t, func() bool { return waiting() == 1 }, 5*time.Second, 10*time.Millisecond, "queued")
	clock.Advance(2 * slow)
	assert.Equal(t, 0, <-got, "a caller gives up once the webhook is stalled")
	assert.Equal(t, -1, f.Room("w"), "stalled: the floor, and it holds 2")

	f.Release("w") // progress: not stalled, at the floor, holding 1
	ctx2, cancel2 := context.WithCancel(ctx)
	wg.Go(func() { got <- map[bool]int{true: 1, false: 0}[f.Acquire(ctx2, "w", clock.Now())] })
	require.Eventually(t, func() bool { return waiting() == 1 }, 5*time.Second, 10*time.Millisecond, "queued")
	cancel2()
	assert.Equal(t, 0, <-got, "a caller whose context ends gives up")
	assert.Zero(t, waiting())
}
