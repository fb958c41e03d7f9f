package worker

import (
	"sync"
	"time"
)

// Slots are Run's attempt slots: at most concurrency attempts at once, and deliveries leased ahead
// (J: a leased delivery with its body read), each started as soon as a slot frees, in about the order
// they were leased: up to twice concurrency, fewer once attempts are slow (aheadNow). The caller's start
// begins an attempt (on a goroutine of its own) and calls Freed once it is over. Safe for concurrent
// use by Run's pass and its attempts.
type Slots[J any] struct {
	concurrency int
	ahead       int           // 2 × concurrency: the most deliveries leased ahead
	batch       int           // concurrency/8: while deliveries wait, a pass leases no fewer
	budget      time.Duration // how long a delivery leased ahead may wait for its slot
	start       func(J)       // called with mu held

	mu      sync.Mutex
	busy    int           // attempts started and not over
	waiting []J           // leased ahead, waiting for a slot
	took    time.Duration // moving average of attempts' durations; 0 before the first
}

// NewSlots returns the slots of a worker making at most concurrency attempts at once, whose deliveries
// may wait budget for a slot (their lease less what an attempt needs of it); start begins an attempt.
func NewSlots[J any](concurrency int, budget time.Duration, start func(J)) *Slots[J] {
	return &Slots[J]{concurrency: concurrency, ahead: 2 * concurrency, batch: max(1, concurrency/8),
		budget: budget, start: start}
}

// Free is how many deliveries a pass may lease now: the slots free and the room ahead, less those
// waiting. While deliveries leased ahead wait, it is 0 until batch are free: a pass costs Redis about
// as much for one delivery as for many, and the waiting keep the slots busy meanwhile. Run makes one
// pass at a time, so nothing else takes them before the pass's Add.
func (s *Slots[J]) Free() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	free := s.concurrency - s.busy + s.aheadNow() - len(s.waiting)
	if free <= 0 || (free < s.batch && len(s.waiting) > 0) {
		return 0
	}
	return free
}

// Add starts the attempts of a pass's leased deliveries, as many as there are free slots; the others
// wait for one.
func (s *Slots[J]) Add(jobs []J) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range jobs {
		if s.busy < s.concurrency {
			s.busy++
			s.start(j)
		} else {
			s.waiting = append(s.waiting, j)
		}
	}
}

// Freed passes an attempt's slot to the next waiting delivery, or frees it.
func (s *Slots[J]) Freed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiting) > 0 {
		next := s.waiting[0]
		s.waiting = s.waiting[1:]
		s.start(next)
	} else {
		s.busy--
	}
}

// Observe adds an attempt's duration (its slot's hold) to the moving average aheadNow reads.
func (s *Slots[J]) Observe(took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.took <= 0 {
		s.took = took
		return
	}
	s.took += (took - s.took) / 8
}

// aheadNow is how many deliveries may wait leased ahead now: ahead, or fewer once attempts are slow, so
// that the last of them is expected to start within half the wait its lease allows (budget): a
// delivery at place n waits about n ÷ concurrency attempts' time for a slot. Called with mu held.
func (s *Slots[J]) aheadNow() int {
	if s.took <= 0 {
		return s.ahead
	}
	return min(s.ahead, int(int64(s.concurrency)*int64(s.budget)/int64(2*s.took)))
}
