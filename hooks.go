package webhooks

import (
	"context"

	"github.com/smartdrop/webhooks/internal/notify"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
	"github.com/smartdrop/webhooks/internal/worker"
)

type (
	// Hooks are callbacks on delivery outcomes, for metrics and alerts (internal/types). Every field is
	// optional. A hook runs after the outcome is recorded, on the goroutine that made the attempt
	// (inside Dispatch, Redeliver or a worker pass), holding no lock or lease, so a slow hook delays
	// only that call; keep hooks fast. A panicking hook is recovered and logged.
	Hooks = types.Hooks
	// AttemptInfo describes one recorded attempt (internal/types).
	AttemptInfo = types.AttemptInfo
)

// Outcomes of an attempt, as AttemptOutcome names them: the values telemetry (otelwebhooks,
// promwebhooks) labels attempts with.
const (
	OutcomeSuccess   = "success"    // the destination has the message: a 2xx, a broker's confirm
	OutcomeHTTPError = "http_error" // a response with another status
	OutcomeError     = "error"      // no answer with a status: a timeout, a connection error, a broker's refusal
)

// AttemptOutcome classifies an attempt by its status code and error (AttemptInfo.StatusCode and
// Error, or a Tracer's AttemptEnd).
func AttemptOutcome(statusCode int, errText string) string {
	switch {
	case errText == "" && (statusCode == 0 || statusCode >= 200 && statusCode < 300):
		return OutcomeSuccess
	case statusCode > 0:
		return OutcomeHTTPError
	default:
		return OutcomeError
	}
}

// afterOutcome tells the Notifier (internal/notify) of a recorded outcome: the hooks, the log,
// delivery.failed, and disabling a webhook that answered 410 Gone.
func (d *Dispatcher) afterOutcome(ctx context.Context, rec *rdb.Record, o worker.Outcome) {
	d.notify.Recorded(ctx, rec, notify.Outcome{Attempted: o.Attempted, Code: o.Code, Duration: o.Attempt.Duration,
		Err: o.Err, Disable: o.Disable})
}
