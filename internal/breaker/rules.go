package breaker

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// MaxBreakFor bounds a circuit's open period, which doubles while its probes fail.
const MaxBreakFor = 10 * time.Minute

// ProbeRecheck is how long past its circuit's probe time a webhook's deliveries stay parked when
// another replica holds the probe: a worker looks again then.
const ProbeRecheck = time.Second

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

// FailureWords says in words why an attempt failed, for an attempt the circuit counts as a failure
// (Kind: a timeout, a connection error, a 5xx, a 429): "the endpoint answered 503 Service
// Unavailable", "no answer within the timeout", "the connection was refused"; ok is false for any
// other attempt.
func FailureWords(a types.Attempt) (words string, ok bool) {
	success := a.Error == "" && a.StatusCode >= 200 && a.StatusCode < 300
	if Kind(success, a.StatusCode) != rdb.CountFailure {
		return "", false
	}
	e := a.Error
	switch {
	case a.StatusCode != 0:
		return strings.TrimSpace(fmt.Sprintf("the endpoint answered %d %s", a.StatusCode, http.StatusText(a.StatusCode))), true
	case strings.Contains(e, "deadline exceeded") || strings.Contains(strings.ToLower(e), "timeout"):
		return "no answer within the timeout", true
	case strings.Contains(e, "connection refused"):
		return "the connection was refused", true
	case strings.Contains(e, "connection reset"):
		return "the connection was reset", true
	case strings.Contains(e, "no such host"):
		return "the host name did not resolve", true
	case strings.Contains(e, "certificate") || strings.Contains(e, "tls:"):
		return "the TLS handshake failed", true
	case e == "":
		return "no answer", true
	}
	return "the request failed: " + e, true
}
