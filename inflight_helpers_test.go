package webhooks

import (
	"time"

	"github.com/smartdrop/webhooks/internal/worker"
)

// setInFlightFloor gives d in-flight limits whose floor is n instead of inFlightFloor(Concurrency), for
// a test whose Concurrency and floor cannot be the engine's relation (Concurrency 4 with webhooks
// holding more than one attempt at once, say), and rebuilds the units that hold the limits. Call it
// before Run or any Dispatch.
func setInFlightFloor(d *Dispatcher, n int) {
	d.flights = worker.NewInFlight(n, d.opts.Timeout, time.Now)
	wireUnits(d)
}

// clockInFlight puts d's in-flight limits on a clock the test moves, so that a webhook stalls (Timeout/2
// without a freed slot) when the test says, however slowly a loaded machine starts the calls before it;
// advance moves the clock and has every waiting call look at it. Attempts still take real time (their
// Timeout, and whether a success was fast). Call it before Run or any Dispatch.
func clockInFlight(d *Dispatcher) (advance func(time.Duration)) {
	clock := newTestClock()
	d.flights = worker.NewInFlight(inFlightFloor(d.opts.Concurrency), d.opts.Timeout, clock.Now)
	wireUnits(d)
	return func(by time.Duration) {
		clock.Advance(by)
		d.flights.Recheck()
	}
}
