package types

import "time"

// A webhook's circuit breaker, as every replica sees it.

// CircuitState is the state of a webhook's circuit breaker.
type CircuitState string

const (
	CircuitClosed  CircuitState = "closed"  // attempts go out
	CircuitOpen    CircuitState = "open"    // attempts wait; one probe may go out once OpenUntil has passed
	CircuitProbing CircuitState = "probing" // open, and a replica holds the probe
)

// Health is a webhook's circuit breaker as every replica sees it.
type Health struct {
	WebhookID           string        `json:"webhook_id"`
	State               CircuitState  `json:"state"`
	ConsecutiveFailures int           `json:"consecutive_failures"`
	FailingSince        time.Time     `json:"failing_since,omitzero"` // start of the current run of failures
	OpenUntil           time.Time     `json:"open_until,omitzero"`    // when the next probe may go out
	OpenFor             time.Duration `json:"open_for,omitempty"`     // the current open period
}
