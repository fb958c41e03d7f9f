package worker

import (
	"errors"
	"fmt"
	"time"
)

// StallLimit is the longest a lease pass's read may take before the pass leases nothing and Run
// waits OutageGrace, as after a failed pass. A read that slow means Redis stopped answering for a
// while (a CLIENT PAUSE, a fork, a failover): the holders of deliveries whose leases ended meanwhile
// could not record their outcomes either, and once Redis answers, their writes (kept, or retried after
// a timeout) would race a takeover that sends the deliveries again. It is under every lease's slack
// (a lease outlasts its attempt's Timeout by at least a second: Options.Timeout).
const StallLimit = time.Second

// ErrStalled is the error of a lease pass whose read took longer than StallLimit: it leased nothing.
var ErrStalled = errors.New("webhooks: Redis stalled")

// timedRead runs read, and fails with ErrStalled when Redis answered it after StallLimit.
func timedRead(what string, read func() error) error {
	start := time.Now()
	if err := read(); err != nil {
		return err
	}
	if took := time.Since(start); took > StallLimit {
		return fmt.Errorf("%w: it took %s to answer the worker's read of %s, so the pass leased nothing (Run leases again %s after Redis answers a ping; a caller of ProcessDue should wait as long)",
			ErrStalled, took.Round(time.Millisecond), what, OutageGrace)
	}
	return nil
}
