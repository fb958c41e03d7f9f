package types

import (
	"context"
	"time"
)

// Tracer is the hook point for distributed tracing, set in Options.Tracer; the library itself depends
// on no tracing package (the nested module github.com/smartdrop/webhooks/otelwebhooks implements it
// with OpenTelemetry). With a Tracer:
//
//   - Dispatch and Enqueue call StartCall as they begin, and its end function as they return.
//   - Every delivery they create keeps, in its record, the W3C traceparent of the call's context (as
//     Traceparent reports it, after StartCall), so that every attempt of the delivery, inline or made
//     days later by a worker of any replica, can start a span linked to the event that caused it.
//   - Every HTTP attempt (inline, by a worker, or by Redeliver) calls StartAttempt with the stored
//     traceparent, and its end function once the attempt is over; the request carries a `traceparent`
//     header, that of the attempt's context (or, when that has none, the stored one).
//
// The methods are called on the goroutines that make the calls and attempts, so they must be safe
// for concurrent use, and fast. A nil Tracer (the default) costs nothing and stores nothing.
type Tracer interface {
	// Traceparent returns the W3C traceparent header value of ctx's current span context, or "" when
	// it has none. A value longer than 256 bytes or not printable ASCII is ignored.
	Traceparent(ctx context.Context) string
	// StartCall is called as Dispatch or Enqueue begins; the context it returns is the call's. end is
	// called once, as the call returns.
	StartCall(ctx context.Context, call CallInfo) (_ context.Context, end func(CallEnd))
	// StartAttempt is called before an HTTP attempt of a delivery; traceparent is the one stored with
	// the delivery ("" when none was). The context it returns is the attempt's. end is called once,
	// when the attempt is over (before its outcome is recorded).
	StartAttempt(ctx context.Context, traceparent string, attempt AttemptStart) (_ context.Context, end func(AttemptEnd))
}

// CallInfo describes a Dispatch or Enqueue call to Tracer.StartCall.
type CallInfo struct {
	// Operation is "Dispatch" or "Enqueue".
	Operation string
	EventID   string
	EventType string
}

// CallEnd is how a Dispatch or Enqueue call ended: its results and error, as it returns them.
type CallEnd struct {
	Results []Result
	Err     error
}

// AttemptStart describes an HTTP attempt about to be made, to Tracer.StartAttempt. It holds no
// secret and no body.
type AttemptStart struct {
	DeliveryID string
	WebhookID  string
	EventID    string
	EventType  string
	// Attempt is the attempt's number: 1 for the first attempt of the delivery.
	Attempt int
	// Method is the request's method (POST).
	Method string
	// URL is the webhook's URL without user info, query or fragment (they may carry credentials).
	URL string
}

// AttemptEnd is how an HTTP attempt ended, to the end function of Tracer.StartAttempt.
type AttemptEnd struct {
	// StatusCode is the response's status, 0 when there was no response.
	StatusCode int
	Duration   time.Duration
	// Error is why the attempt failed ("" on a 2xx response). Like the stored error, it names no
	// secret.
	Error string
	// Abandoned is set when no outcome is recorded for the attempt: too little of the lease was left
	// to make it, or the caller's context ended during it; a worker makes it again after the lease.
	Abandoned bool
}
