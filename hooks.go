package webhooks

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/worker"
)

// Hooks are callbacks on delivery outcomes, for metrics and alerts. Every field is optional. A hook
// runs after the outcome is recorded, on the goroutine that made the attempt (inside Dispatch,
// Redeliver or a worker pass), holding no lock or lease, so a slow hook delays only that call; keep
// hooks fast. A panicking hook is recovered and logged.
type Hooks struct {
	// AttemptFinished is called once per recorded HTTP attempt.
	AttemptFinished func(AttemptInfo)
	// DeliverySucceeded is called when a delivery succeeds.
	DeliverySucceeded func(Delivery)
	// DeliveryFailed is called when a delivery fails for good: its retries ran out, its webhook
	// answered 410 Gone, or its webhook was deleted or disabled.
	DeliveryFailed func(Delivery)
	// WebhookDisabled is called when the library disables a webhook (410 Gone, or failing for
	// Options.DisableAfter).
	WebhookDisabled func(webhookID, reason string)
	// CircuitOpened is called when a webhook's circuit opens (or a failed probe opens it again) until
	// the given time, by the replica whose attempt opened it.
	CircuitOpened func(webhookID string, until time.Time)
	// CircuitClosed is called when a successful attempt closes a webhook's circuit.
	CircuitClosed func(webhookID string)
}

// AttemptInfo describes one recorded attempt.
type AttemptInfo struct {
	// Delivery is the delivery as the attempt left it.
	Delivery   Delivery
	StatusCode int
	Duration   time.Duration
	// Error is why the attempt failed, "" on success.
	Error string
}

// Outcomes of an attempt, as AttemptOutcome names them: the values telemetry (otelwebhooks,
// promwebhooks) labels attempts with.
const (
	OutcomeSuccess   = "success"    // a 2xx response
	OutcomeHTTPError = "http_error" // a response with another status
	OutcomeError     = "error"      // no response: a timeout, a connection error, a refused address
)

// AttemptOutcome classifies an attempt by its status code and error (AttemptInfo.StatusCode and
// Error, or a Tracer's AttemptEnd).
func AttemptOutcome(statusCode int, errText string) string {
	switch {
	case statusCode >= 200 && statusCode < 300 && errText == "":
		return OutcomeSuccess
	case statusCode > 0:
		return OutcomeHTTPError
	default:
		return OutcomeError
	}
}

// runHook calls f, recovering and logging a panic.
func (d *Dispatcher) runHook(name string, f func()) {
	defer func() {
		if p := recover(); p != nil {
			d.log.Error("webhooks: hook panicked", "hook", name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	f()
}

// afterOutcome runs the hooks for a recorded outcome, and disables the webhook when the outcome says
// so (410 Gone). The circuit's part (its hooks, DisableAfter) follows the circuit count (afterCount).
func (d *Dispatcher) afterOutcome(ctx context.Context, rec *rdb.Record, o worker.Outcome) {
	h := d.opts.Hooks
	d.logOutcome(ctx, rec, o)
	if o.Attempted && h.AttemptFinished != nil {
		info := AttemptInfo{Delivery: rec.Delivery, StatusCode: o.Code, Duration: o.Attempt.Duration, Error: o.Err}
		d.runHook("AttemptFinished", func() { h.AttemptFinished(info) })
	}
	switch {
	case rec.Status == StatusSuccess && h.DeliverySucceeded != nil:
		d.runHook("DeliverySucceeded", func() { h.DeliverySucceeded(rec.Delivery) })
	case rec.Status == StatusFailed && h.DeliveryFailed != nil:
		d.runHook("DeliveryFailed", func() { h.DeliveryFailed(rec.Delivery) })
	}
	if rec.Status == StatusFailed {
		d.deliveryFailed(ctx, rec)
	}
	if o.Disable {
		d.disableWebhook(ctx, rec.WebhookID, "the endpoint answered 410 Gone", Health{}, writeKey(rec))
	}
}

// logOutcome logs a recorded outcome with the delivery's ids and attempt number: a success at debug
// level, a failed attempt at info, a delivery failed for good at warn. Secrets and bodies are never
// logged.
func (d *Dispatcher) logOutcome(ctx context.Context, rec *rdb.Record, o worker.Outcome) {
	level, msg := slog.LevelInfo, "webhooks: attempt failed"
	switch {
	case rec.Status == StatusSuccess:
		level, msg = slog.LevelDebug, "webhooks: delivered"
	case rec.Status == StatusFailed:
		level, msg = slog.LevelWarn, "webhooks: delivery failed"
	}
	if !d.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("delivery_id", rec.ID), slog.String("webhook_id", rec.WebhookID),
		slog.String("event_id", rec.EventID), slog.String("event_type", rec.EventType), slog.Int("attempt", rec.Attempts),
		slog.String("status", string(rec.Status))}
	if o.Attempted {
		attrs = append(attrs, slog.Int("status_code", o.Code), slog.Duration("duration", o.Attempt.Duration))
	}
	if o.Err != "" {
		attrs = append(attrs, slog.String("error", o.Err))
	}
	if rec.Status == StatusPending {
		attrs = append(attrs, slog.Time("next_attempt_at", rec.NextAttemptAt))
	}
	d.log.LogAttrs(ctx, level, msg, attrs...)
}
