package webhooks

import (
	"context"
	"net/http"
	"time"

	"github.com/smartdrop/webhooks/internal/endpoint"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/worker"
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

// traceparentHeader is the W3C Trace Context request header.
const traceparentHeader = "traceparent"

// maxTraceparent bounds a stored traceparent (a W3C version 00 one is 55 bytes).
const maxTraceparent = 256

// validTraceparent reports whether s may be stored and sent as a traceparent: 1 to 256 bytes of
// printable ASCII.
func validTraceparent(s string) bool {
	if s == "" || len(s) > maxTraceparent {
		return false
	}
	for i := range len(s) {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// traceparent is the traceparent of ctx as the Tracer reports it, "" without a Tracer or a valid one.
func (d *Dispatcher) traceparent(ctx context.Context) string {
	if d.opts.Tracer == nil {
		return ""
	}
	if tp := d.opts.Tracer.Traceparent(ctx); validTraceparent(tp) {
		return tp
	}
	return ""
}

// startCall starts a Dispatch or Enqueue call's trace; the returned end function takes its results.
func (d *Dispatcher) startCall(ctx context.Context, op string, evt Event) (context.Context, func([]Result, error)) {
	if d.opts.Tracer == nil {
		return ctx, func([]Result, error) {}
	}
	ctx, end := d.opts.Tracer.StartCall(ctx, CallInfo{Operation: op, EventID: evt.ID, EventType: evt.Type})
	return ctx, func(results []Result, err error) {
		if end != nil {
			end(CallEnd{Results: results, Err: err})
		}
	}
}

// stampTrace stores the traceparent of the call's context in the records it is about to create.
func (d *Dispatcher) stampTrace(ctx context.Context, recs []*rdb.Record) {
	if tp := d.traceparent(ctx); tp != "" {
		for _, r := range recs {
			r.Traceparent = tp
		}
	}
}

// tracedAttempt is attempt within the Tracer's attempt span, when there is a Tracer.
func (d *Dispatcher) tracedAttempt(ctx context.Context, wh *storedWebhook, rec *rdb.Record, body []byte) worker.AttemptResult {
	if d.opts.Tracer == nil {
		return d.attempt(ctx, wh, rec, body)
	}
	actx, end := d.opts.Tracer.StartAttempt(ctx, rec.Traceparent, AttemptStart{DeliveryID: rec.ID,
		WebhookID: rec.WebhookID, EventID: rec.EventID, EventType: rec.EventType, Attempt: rec.Attempts + 1,
		Method: http.MethodPost, URL: endpoint.RedactURL(wh.URL)})
	if actx == nil {
		actx = ctx
	}
	res := d.attempt(actx, wh, rec, body)
	if end != nil {
		end(AttemptEnd{StatusCode: res.Code, Duration: res.Dur, Error: res.Err, Abandoned: res.Canceled})
	}
	return res
}

// setTraceparent puts the attempt's traceparent on its request: that of the attempt's context, or
// else the one stored with the delivery.
func (d *Dispatcher) setTraceparent(ctx context.Context, h http.Header, rec *rdb.Record) {
	if d.opts.Tracer == nil {
		return
	}
	tp := d.traceparent(ctx)
	if tp == "" {
		tp = rec.Traceparent
	}
	if tp != "" {
		h.Set(traceparentHeader, tp)
	}
}
