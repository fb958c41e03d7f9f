package breaker

import (
	"fmt"
	"net/http"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// MaxBreakFor bounds a circuit's open period, which doubles while its probes fail.
const MaxBreakFor = 10 * time.Minute

// Kind is how the circuit counts an attempt that got an answer: rdb.CountSuccess when it succeeded;
// rdb.CountFailure for a timeout or a connection error (code 0: no status), a 5xx or a 429, the
// failures that say the endpoint is unwell; rdb.CountRejected for any other (a 4xx, a 3xx), which is in
// the run of failures but not in the count.
func Kind(success bool, code int) string {
	switch {
	case success:
		return rdb.CountSuccess
	case code == 0 || code >= 500 || code == http.StatusTooManyRequests:
		return rdb.CountFailure
	}
	return rdb.CountRejected
}

// ParkedReason is the LastError of a delivery parked until until because its webhook's circuit h is open.
func ParkedReason(h types.Health, until time.Time) string {
	return fmt.Sprintf("circuit open after %d consecutive failed attempts: parked until %s, retry budget kept",
		h.ConsecutiveFailures, until.UTC().Format(time.RFC3339))
}
