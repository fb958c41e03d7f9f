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
