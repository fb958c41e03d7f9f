package webhookstest

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Wait blocks until cond holds for the requests received so far, or ctx ends (then it returns an
// error wrapping ctx's). cond is called with a snapshot of Requests at the start and again each time a
// request arrives, starts or stops hanging, or is answered; it may call the Receiver's methods.
func (r *Receiver) Wait(ctx context.Context, cond func([]Request) bool) error {
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		if cond(r.Requests()) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("webhookstest: condition not met: %w", context.Cause(ctx))
		}
	}
}

// WaitFor is Wait bounded by within: it fails tb (Fatalf, so call it from the test's goroutine) when
// cond does not hold in time, with msg and the requests received.
func (r *Receiver) WaitFor(tb testing.TB, within time.Duration, cond func([]Request) bool, msg string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := r.Wait(ctx, cond); err != nil {
		tb.Fatalf("webhookstest: not within %s: %s; received %s", within, msg, summary(r.Requests()))
	}
}

// WaitForEvent waits (up to within) until a request of eventID verified and was answered 2xx, and
// returns that request; it fails tb (Fatalf) when none does in time.
func (r *Receiver) WaitForEvent(tb testing.TB, eventID string, within time.Duration) Request {
	tb.Helper()
	var got Request
	r.WaitFor(tb, within, func(reqs []Request) bool {
		for _, q := range reqs {
			if q.EventID == eventID && q.Succeeded() {
				got = q
				return true
			}
		}
		return false
	}, fmt.Sprintf("a verified request of event %q answered 2xx", eventID))
	return got
}

// ReceivedOnce fails tb (Fatalf) unless exactly one request of eventID was received so far, and it
// verified (see Once); it returns that request.
func (r *Receiver) ReceivedOnce(tb testing.TB, eventID string) Request {
	tb.Helper()
	q, err := r.Once(eventID)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return q
}

// AllVerified fails tb (Errorf) for each request received so far that did not verify.
func (r *Receiver) AllVerified(tb testing.TB) {
	tb.Helper()
	for _, q := range r.Requests() {
		if !q.Verified {
			tb.Errorf("webhookstest: request %s (event %q) did not verify: %v", q.DeliveryID, q.EventID, q.VerifyErr)
		}
	}
}

// summary describes requests for a failure message.
func summary(reqs []Request) string {
	if len(reqs) == 0 {
		return "nothing"
	}
	s := fmt.Sprintf("%d requests:", len(reqs))
	for i, q := range reqs {
		if i == 10 {
			return s + fmt.Sprintf(" … (%d more)", len(reqs)-i)
		}
		s += fmt.Sprintf(" [event %q attempt %d status %d verified %t]", q.EventID, q.Attempt, q.Status, q.Verified)
	}
	return s
}
