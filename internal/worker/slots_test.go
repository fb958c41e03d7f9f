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
	assert.Equal(t, 128, r.Claim(), "fast: twice Concurrency ahead")
	r = &Slots[int]{concurrency: 64, ahead: 128, batch: 8, budget: 5 * time.Second, busy: 64, took: 5 * time.Second}
	assert.Equal(t, 32, r.Claim(), "slow: as aheadNow says")
}

// TestClaimedSlotsAreNotClaimedAgain: a slot a pass has claimed is not claimed again until the pass
// gives back what it did not fill (the slots a pass leases for are its own while it waits for Redis).
func TestClaimedSlotsAreNotClaimedAgain(t *testing.T) {
	t.Parallel()
	r := &Slots[int]{concurrency: 64, ahead: 128, batch: 8, budget: 5 * time.Second}
	first := r.Claim()
	assert.Equal(t, 192, first, "every slot and every delivery ahead")
	assert.Equal(t, 0, r.Claim(), "nothing left to claim while the pass runs")
	r.Unclaim(first)
	assert.Equal(t, 192, r.Claim(), "given back, claimed again")
}

// TestSlotsStartInOrderAsSlotsFree: Add starts as many attempts as there are slots, the others wait,
// and each freed slot starts the next waiting one, in the order they were leased.
func TestSlotsStartInOrderAsSlotsFree(t *testing.T) {
	t.Parallel()
	var started []int
	s := NewSlots(2, 5*time.Second, func(j int) { started = append(started, j) })
	claimed := s.Claim()
	assert.Equal(t, 2+4, claimed, "two slots and four ahead")
	s.Add([]int{1, 2, 3, 4}, claimed)
	assert.Equal(t, []int{1, 2}, started, "one attempt per slot")
	more := s.Claim()
	assert.Equal(t, 2, more, "two busy, two waiting: room for two more ahead")
	s.Unclaim(more)
	s.Freed()
	assert.Equal(t, []int{1, 2, 3}, started, "the freed slot goes to the first waiting")
	s.Freed()
	s.Freed()
	s.Freed()
	assert.Equal(t, []int{1, 2, 3, 4}, started)
	assert.Equal(t, 6, s.Claim(), "every slot free again")
}
