package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestLeasedAheadFollowsAttemptTimes: Run leases twice Concurrency ahead while attempts are fast, and
// fewer as they slow, so the last delivery leased ahead is expected to start within half the wait its
// lease allows.
func TestLeasedAheadFollowsAttemptTimes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		took time.Duration
		want int
	}{
		{0, 128},                       // no attempt yet
		{time.Millisecond, 128},        // fast: the cap
		{1250 * time.Millisecond, 128}, // 64 × 5s ÷ 2.5s
		{2500 * time.Millisecond, 64},
		{5 * time.Second, 32},
		{20 * time.Second, 8},
		{time.Hour, 0}, // hung: nothing leased ahead
	} {
		r := &Slots[int]{concurrency: 64, ahead: 128, budget: 5 * time.Second, took: tc.took}
		assert.Equal(t, tc.want, r.aheadNow(), "attempts of %s", tc.took)
	}
	r := &Slots[int]{concurrency: 64, ahead: 128, budget: 5 * time.Second}
	r.Observe(5 * time.Second)
	assert.Equal(t, 32, r.aheadNow(), "the first attempt sets the average")
	for range 40 {
		r.Observe(time.Millisecond)
	}
	assert.Equal(t, 128, r.aheadNow(), "fast attempts bring it back")

	// What a pass may claim follows it: with every slot busy, only the deliveries it may lease ahead.
	r = &Slots[int]{concurrency: 64, ahead: 128, batch: 8, budget: 5 * time.Second, busy: 64}
	assert.Equal(t, 128, r.Free(), "fast: twice Concurrency ahead")
	r = &Slots[int]{concurrency: 64, ahead: 128, batch: 8, budget: 5 * time.Second, busy: 64, took: 5 * time.Second}
	assert.Equal(t, 32, r.Free(), "slow: as aheadNow says")
}

// TestSlotsStartInOrderAsSlotsFree: Add starts as many attempts as there are slots, the others wait,
// and each freed slot starts the next waiting one, in the order they were leased.
func TestSlotsStartInOrderAsSlotsFree(t *testing.T) {
	t.Parallel()
	var started []int
	s := NewSlots(2, 5*time.Second, func(j int) { started = append(started, j) })
	assert.Equal(t, 2+4, s.Free(), "two slots and four ahead")
	s.Add([]int{1, 2, 3, 4})
	assert.Equal(t, []int{1, 2}, started, "one attempt per slot")
	assert.Equal(t, 2, s.Free(), "two busy, two waiting: room for two more ahead")
	s.Freed()
	assert.Equal(t, []int{1, 2, 3}, started, "the freed slot goes to the first waiting")
	s.Freed()
	s.Freed()
	s.Freed()
	assert.Equal(t, []int{1, 2, 3, 4}, started)
	assert.Equal(t, 6, s.Free(), "every slot free again")
}
