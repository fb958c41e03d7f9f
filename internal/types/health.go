package types

import (
	"encoding/json"
	"time"
)

// A webhook's circuit breaker, as every replica sees it.

// CircuitState is the state of a webhook's circuit breaker.
type CircuitState string

const (
	CircuitClosed  CircuitState = "closed"  // attempts go out
	CircuitOpen    CircuitState = "open"    // attempts wait; one probe may go out once OpenUntil has passed
	CircuitProbing CircuitState = "probing" // open, and a replica holds the probe
	// CircuitDisabled is a disabled webhook's circuit, as Health and the admin API give it: nothing
	// goes out, no probe either, whatever the circuit counted before.
	CircuitDisabled CircuitState = "disabled"
)

// Health is a webhook's circuit breaker as every replica sees it.
type Health struct {
	WebhookID           string       `json:"webhook_id"`
	State               CircuitState `json:"state"`
	ConsecutiveFailures int          `json:"consecutive_failures"`
	FailingSince        time.Time    `json:"failing_since,omitzero"` // start of the current run of failures
	OpenUntil           time.Time    `json:"open_until,omitzero"`    // when the next probe may go out
	// LastFailure says in words the newest failed attempt that counts towards BreakAfter ("the
	// endpoint answered 503 Service Unavailable", "no answer within the timeout", "the connection was
	// refused"), while the circuit holds failures: why it is open or failing. The admin API's health
	// answer reads it from the attempts of the webhook's 100 newest deliveries answered since
	// FailingSince; "" when none of them holds such an attempt (e.g. every one of them parked since),
	// and in WebhookRepo.Health, which reads the circuit only.
	LastFailure string `json:"last_failure,omitempty"`
	// OpenFor is the current open period; in JSON "open_for_ms", whole milliseconds.
	OpenFor time.Duration `json:"-"`
}

// healthJSON is Health as JSON: durations as numbers of milliseconds named so.
type healthJSON struct {
	plainHealth
	OpenForMs int64 `json:"open_for_ms,omitempty"`
}

type plainHealth Health // Health's fields without its methods

// MarshalJSON writes h with OpenFor as "open_for_ms".
func (h Health) MarshalJSON() ([]byte, error) {
	return json.Marshal(healthJSON{plainHealth(h), h.OpenFor.Milliseconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (h *Health) UnmarshalJSON(b []byte) error {
	var j healthJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*h = Health(j.plainHealth)
	h.OpenFor = time.Duration(j.OpenForMs) * time.Millisecond
	return nil
}
