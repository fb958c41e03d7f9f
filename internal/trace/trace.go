// Package trace runs a Dispatcher's calls and attempts under its Tracer (Options.Tracer), when there
// is one: the call's span, the traceparent stored with each delivery, the attempt's span and the
// request's traceparent header. A nil Tracer costs nothing and stores nothing.
package trace

import (
	"context"
	"net/http"
	"strings"

	"github.com/smartdrop/webhooks/internal/endpoint"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
	"github.com/smartdrop/webhooks/internal/worker"
)

// Tracing is a Dispatcher's Tracer (nil: none).
type Tracing struct {
	Tracer types.Tracer
}

// header is the W3C Trace Context request header.
const header = "traceparent"

// maxTraceparent bounds a stored traceparent (a W3C version 00 one is 55 bytes).
const maxTraceparent = 256

// Valid reports whether s may be stored and sent as a traceparent: 1 to 256 bytes of printable ASCII.
func Valid(s string) bool {
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

// Traceparent is the traceparent of ctx as the Tracer reports it, "" without a Tracer or a valid one.
func (t Tracing) Traceparent(ctx context.Context) string {
	if t.Tracer == nil {
		return ""
	}
	if tp := t.Tracer.Traceparent(ctx); Valid(tp) {
		return tp
	}
	return ""
}

// StartCall starts a Dispatch or Enqueue call's trace; the returned end function takes its results.
func (t Tracing) StartCall(ctx context.Context, op string, evt types.Event) (context.Context, func([]types.Result, error)) {
	if t.Tracer == nil {
		return ctx, func([]types.Result, error) {}
	}
	ctx, end := t.Tracer.StartCall(ctx, types.CallInfo{Operation: op, EventID: evt.ID, EventType: evt.Type})
	return ctx, func(results []types.Result, err error) {
		if end != nil {
			end(types.CallEnd{Results: results, Err: err})
		}
	}
}

// Stamp stores the traceparent of the call's context in the records it is about to create.
func (t Tracing) Stamp(ctx context.Context, recs []*rdb.Record) {
	if tp := t.Traceparent(ctx); tp != "" {
		for _, r := range recs {
			r.Traceparent = tp
		}
	}
}

// SendFunc makes an HTTP attempt of rec to wh (worker.AttempterConfig.Send).
type SendFunc = func(ctx context.Context, wh *rdb.WebhookRecord, rec *rdb.Record, body []byte) worker.AttemptResult

// Attempts is send run within the Tracer's attempt span, when there is a Tracer; send itself
// otherwise.
func (t Tracing) Attempts(send SendFunc) SendFunc {
	if t.Tracer == nil {
		return send
	}
	return func(ctx context.Context, wh *rdb.WebhookRecord, rec *rdb.Record, body []byte) worker.AttemptResult {
		actx, end := t.Tracer.StartAttempt(ctx, rec.Traceparent, types.AttemptStart{DeliveryID: rec.ID,
			WebhookID: rec.WebhookID, EventID: rec.EventID, EventType: rec.EventType, Attempt: rec.Attempts + 1,
			Method: method(wh.URL), URL: endpoint.RedactURL(wh.URL)})
		if actx == nil {
			actx = ctx
		}
		res := send(actx, wh, rec, body)
		if end != nil {
			end(types.AttemptEnd{StatusCode: res.Code, Duration: res.Dur, Error: res.Err, Abandoned: res.Canceled})
		}
		return res
	}
}

// method is an attempt's HTTP method: POST to an HTTP endpoint, none to another destination.
func method(url string) string {
	if strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") {
		return http.MethodPost
	}
	return ""
}

// SetHeader puts the attempt's traceparent on its request: that of the attempt's context, or else the
// one stored with the delivery.
func (t Tracing) SetHeader(ctx context.Context, h http.Header, rec *rdb.Record) {
	if t.Tracer == nil {
		return
	}
	tp := t.Traceparent(ctx)
	if tp == "" {
		tp = rec.Traceparent
	}
	if tp != "" {
		h.Set(header, tp)
	}
}
