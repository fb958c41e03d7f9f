package destination

import (
	"errors"
	"time"
)

// Kind is what the engine does with a failed attempt.
type Kind uint8

const (
	// Unavailable is a failure that says the destination is unwell (no connection, no answer in
	// time, an HTTP 5xx or 429, a broker that did not confirm, no queue or stream for the message):
	// the delivery is retried by the schedule, and the failure counts toward the webhook's circuit
	// breaker (Options.BreakAfter). Every error that is not an *Error is of this kind.
	Unavailable Kind = iota
	// Rejected is a refusal by a destination that is up (an HTTP 4xx): retried by the schedule, but
	// not counted by the circuit breaker.
	Rejected
	// Permanent is a failure no later attempt can mend (a message the destination will never take):
	// the delivery fails now, without retries, and the breaker does not count it.
	Permanent
	// Gone says the destination no longer exists (an HTTP 410): the delivery fails and the webhook is
	// disabled.
	Gone
)

// String is the kind's name.
func (k Kind) String() string {
	switch k {
	case Unavailable:
		return "unavailable"
	case Rejected:
		return "rejected"
	case Permanent:
		return "permanent"
	case Gone:
		return "gone"
	}
	return "unknown"
}

// Error is a failed attempt with what the engine is to do about it: Send returns one, e.g.
// &destination.Error{Kind: destination.Rejected, Err: err}, to say more than a plain error does.
type Error struct {
	// Kind is what the engine does with the failure.
	Kind Kind
	// RetryAfter asks the next attempt to wait at least this long (an HTTP Retry-After; at most an
	// hour is honoured); 0 leaves the schedule's delay.
	RetryAfter time.Duration
	// Err is the failure, in words.
	Err error
}

// Error is the failure's words.
func (e *Error) Error() string {
	if e.Err == nil {
		return e.Kind.String()
	}
	return e.Err.Error()
}

// Unwrap returns the failure.
func (e *Error) Unwrap() error { return e.Err }

// RetryAfter marks err a failure of an unwell destination (Unavailable) whose next attempt waits at
// least d.
func RetryAfter(err error, d time.Duration) error {
	return &Error{Kind: Unavailable, RetryAfter: d, Err: err}
}

// Classify returns the kind of a failure and the wait it asks for: an *Error's in err's chain, else
// Unavailable and 0.
func Classify(err error) (Kind, time.Duration) {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind, e.RetryAfter
	}
	return Unavailable, 0
}
