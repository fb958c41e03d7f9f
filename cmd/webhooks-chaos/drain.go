package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/smartdrop/webhooks"
)

// recordState is what a pair's delivery record says.
type recordState int

const (
	recordSuccess recordState = iota
	recordFailed
	recordPending
	recordMissing // no record: the pair was never accepted, or its record was lost
	recordUnread  // the read failed
)

// drainResult is when every pair's record became final.
type drainResult struct {
	drained bool
	after   time.Duration // from the last accept to the poll that found every record final
	left    int           // pairs not final when the wait ended
}

// drain waits (at most -drain-observe after the last accept) until every pair is final: a pair with
// no 2xx at the receiver must have a failed record, and every record must be success or failed.
// Records are read only for pairs that may not be final yet: the unseen ones on every poll, every
// pair once, then the ones that were not final.
func (s *soak) drain(ctx context.Context) drainResult {
	deadline := s.lastAccept.Add(s.cfg.drainObserve)
	var suspects []pair // pairs whose record was not final at the last full read; nil: read all
	for full := false; ; {
		check := s.recv.unseen(s.pairs)
		if full {
			check = append(check, suspects...)
		}
		left := notFinal(s.readRecords(ctx, check), check)
		if len(left) == 0 && !full {
			full = true
			suspects = notFinal(s.readRecords(ctx, s.pairs), s.pairs)
			left = suspects
		} else if full {
			suspects = left
		}
		if len(left) == 0 {
			return drainResult{drained: true, after: time.Since(s.lastAccept)}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return drainResult{after: time.Since(s.lastAccept), left: len(left)}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// notFinal returns the pairs whose record is neither success nor failed.
func notFinal(states []recordState, pairs []pair) []pair {
	var out []pair
	for i, st := range states {
		if st != recordSuccess && st != recordFailed {
			out = append(out, pairs[i])
		}
	}
	return out
}

// readRecords reads the record of each pair, from 32 goroutines.
func (s *soak) readRecords(ctx context.Context, pairs []pair) []recordState {
	states := make([]recordState, len(pairs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range next {
				states[i] = s.readRecord(ctx, pairs[i])
			}
		})
	}
	for i := range pairs {
		next <- i
	}
	close(next)
	wg.Wait()
	return states
}

// readRecord reads one pair's record, trying 3 times.
func (s *soak) readRecord(ctx context.Context, p pair) recordState {
	for range 3 {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		d, err := s.d.Deliveries().Find(callCtx, s.ids[p.endpoint], p.event)
		cancel()
		switch {
		case errors.Is(err, webhooks.ErrNotFound):
			return recordMissing
		case err != nil:
			continue
		case d.Status == webhooks.StatusSuccess:
			return recordSuccess
		case d.Status == webhooks.StatusFailed:
			return recordFailed
		default:
			return recordPending
		}
	}
	return recordUnread
}

// sweepResult is the final figures of every pair.
type sweepResult struct {
	states    map[recordState]int
	delivered int // pairs the receiver answered 2xx at least once
	failed    int // pairs never answered 2xx whose record failed
	undone    int // pairs never answered 2xx whose record is not failed
	extra2xx  int // 2xx answers beyond the first of each pair
	dupPairs  int // pairs answered 2xx more than once
	lies      int // records success without any 2xx answered
	strangers int // pairs answered 2xx that the soak never dispatched
	examples  []string
}

// sweep reads every pair's record once the producers are stopped, and counts the figures.
func (s *soak) sweep(ctx context.Context) (*sweepResult, error) {
	if ctx.Err() != nil {
		return nil, fmt.Errorf("final read: %w", ctx.Err())
	}
	states := s.readRecords(ctx, s.pairs)
	r := &sweepResult{states: map[recordState]int{}, strangers: s.recv.strangers(s.pairs)}
	for i, p := range s.pairs {
		st, ok := states[i], s.recv.okCount(p)
		r.states[st]++
		switch {
		case ok > 0:
			r.delivered++
			r.extra2xx += ok - 1
			if ok > 1 {
				r.dupPairs++
			}
		case st == recordFailed:
			r.failed++
		default:
			r.undone++
		}
		if st == recordSuccess && ok == 0 {
			r.lies++
		}
		if (ok == 0 && st != recordFailed) || st == recordPending || st == recordMissing || st == recordUnread {
			if len(r.examples) < 5 {
				r.examples = append(r.examples, fmt.Sprintf("%s/%s (%s, %d×2xx)", endpoints[p.endpoint].name, p.event, st, ok))
			}
		}
	}
	return r, nil
}

func (st recordState) String() string {
	return [...]string{"success", "failed", "pending", "missing", "unread"}[st]
}
