package webhooks

import "github.com/smartdrop/webhooks/internal/types"

// The tracing hook (internal/types; run by internal/trace). With a Tracer set in Options.Tracer,
// Dispatch and Enqueue run in a call span, every delivery keeps the call's W3C traceparent, and every
// HTTP attempt, inline or by any replica's worker days later, runs in a span linked to it and sends a
// traceparent header. otelwebhooks implements it with OpenTelemetry.
//
// The contract of an implementation: its methods are called on the goroutines that make the calls and
// attempts, so they must be safe for concurrent use, and fast; each end function is called once; a
// traceparent longer than 256 bytes or not printable ASCII is ignored; AttemptEnd.Abandoned marks an
// attempt whose outcome is not recorded (a worker makes it again after the lease). A nil Tracer (the
// default) costs nothing and stores nothing.
type (
	// Tracer is the hook point for distributed tracing (internal/types).
	Tracer = types.Tracer
	// CallInfo describes a Dispatch or Enqueue call to Tracer.StartCall (internal/types).
	CallInfo = types.CallInfo
	// CallEnd is how a Dispatch or Enqueue call ended (internal/types).
	CallEnd = types.CallEnd
	// AttemptStart describes an HTTP attempt about to be made, to Tracer.StartAttempt (internal/types).
	AttemptStart = types.AttemptStart
	// AttemptEnd is how an HTTP attempt ended (internal/types).
	AttemptEnd = types.AttemptEnd
)
