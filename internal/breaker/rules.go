package breaker

import (
	"fmt"
	"github.com/smartdrop/webhooks/destination"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// MaxBreakFor bounds a circuit's open period, which doubles while its probes fail.
const MaxBreakFor = 10 * time.Minute

// ProbeRecheck is how long past its circuit's probe time a webhook's deliveries stay parked when
// another replica holds the probe: a worker looks again then.
const ProbeRecheck = time.Second

// Kind is how the circuit counts an attempt: rdb.CountSuccess when it succeeded; rdb.CountFailure for
// a failure of kind destination.Unavailable (a timeout, a connection error, a 5xx or a 429, a broker
// that did not confirm), which says the destination is unwell; rdb.CountRejected for any other (a 4xx,
// a 3xx, a permanent failure), which is in the run of failures but not in the count.
func Kind(success bool, failure destination.Kind) string {
	switch {
	case success:
		return rdb.CountSuccess
	case failure == destination.Unavailable:
		return rdb.CountFailure
	}
	return rdb.CountRejected
}

// ParkedReason is the LastError of a delivery parked until until because its webhook's circuit h is open.
func ParkedReason(h types.Health, until time.Time) string {
	return fmt.Sprintf("circuit open after %d consecutive failed attempts: parked until %s, retry budget kept",
		h.ConsecutiveFailures, until.UTC().Format(time.RFC3339))
}
