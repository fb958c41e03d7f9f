package worker

import (
	"sync"
	"time"
)

// After a pass of the worker fails, Run waits OutageGrace once Redis answers again before it leases
// anything, writing the outcomes it kept first; so does every replica's Run that saw the outage, so
// none re-leases a delivery whose outcome another is about to write.
const (
	// OutageGrace is how long Run waits, once Redis answers after failing one of its passes, before it
	// leases again: the time every replica has to write the outcomes it kept. Replicas do not see
	// Redis come back at once: a go-redis pool whose dials failed PoolSize times stops dialing and
	// probes once a second in the background, so a replica may fail for up to a second more after
	// another's first answer. The grace covers that second, OutagePing and the write, with room for
	// a loaded machine (at 1 s, a CI run under load repeated 3 of 6 deliveries in
	// TestOutcomesSurviveAnOutageLongerThanTheLease).
	OutageGrace = 3 * time.Second
	// OutagePing is how often Run asks whether Redis answers again after an outage: a fraction of the
	// grace, so every replica's kept outcomes go out before any replica's grace ends.
	OutagePing = 100 * time.Millisecond
)

// Outage is a worker's view of a Redis outage: whether one of its passes failed, and when it may lease
// again once Redis answers. The zero value is no outage. Safe for concurrent use.
type Outage struct {
	mu       sync.Mutex
	down     bool      // a worker pass failed, and none has succeeded since
	resumeAt time.Time // when the worker may lease again after an outage
}

// PassFailed notes that a worker pass could not reach Redis.
func (o *Outage) PassFailed() {
	o.mu.Lock()
	o.down = true
	o.mu.Unlock()
}

// IsDown reports whether a pass failed and none has reached Redis since.
func (o *Outage) IsDown() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.down
}

// Reached notes that Redis answered the worker at now: after an outage, it starts the grace.
func (o *Outage) Reached(now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down {
		o.down, o.resumeAt = false, now.Add(OutageGrace)
	}
}

// GraceLeft is how long the worker must still wait at now before it leases again.
func (o *Outage) GraceLeft(now time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.resumeAt.Sub(now)
}
