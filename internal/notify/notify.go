// Package notify tells the application and the operator what the deliveries and the circuits did,
// once an outcome or a circuit count is recorded: the Hooks (a panicking hook is recovered and
// logged), the log, the operational events (operational.go), and disabling a webhook (disable.go).
package notify

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// Webhooks is the registry as the Notifier reads and changes it (the root's WebhookRepo).
type Webhooks interface {
	// StoredByID reads webhooks by id in one round trip; one gone is not in the map.
	StoredByID(ctx context.Context, ids []string) (map[string]*rdb.WebhookRecord, error)
	// Disable disables a webhook for a reason, and reports whether it changed it (false: it was
	// disabled already).
	Disable(ctx context.Context, id, reason string) (bool, error)
}

// Notifier runs what follows a recorded outcome or circuit count. Its fields are set by the
// Dispatcher that holds it, from its Options.
type Notifier struct {
	Hooks             types.Hooks
	Log               *slog.Logger
	Now               func() time.Time
	OperationalEvents bool          // Options.OperationalEvents
	DisableAfter      time.Duration // Options.DisableAfter
	Webhooks          Webhooks
	// Client and Keys hold the counts of failed deliveries per webhook and window (delivery.failed).
	Client redis.UniversalClient
	Keys   rdb.Keys
	// Enqueue enqueues an operational event, as Enqueue does, to its tenant's webhooks that subscribe
	// to its type by name or prefix, except webhook about.
	Enqueue func(ctx context.Context, evt types.Event, about string) error

	failing failingMemo // the runs of failures this replica sent webhook.failing for
}

// Outcome is what a recorded outcome tells the Notifier.
type Outcome struct {
	Attempted bool // an HTTP attempt was made
	Code      int
	Duration  time.Duration
	Err       string
	Disable   bool // the endpoint answered 410 Gone: its webhook is disabled
}

// runHook calls f, recovering and logging a panic.
func (n *Notifier) runHook(name string, f func()) {
	defer func() {
		if p := recover(); p != nil {
			n.Log.Error("webhooks: hook panicked", "hook", name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	f()
}

// Recorded runs the hooks for a recorded outcome, sends delivery.failed for a delivery failed for
// good, and disables the webhook when the outcome says so (410 Gone). The circuit's part (its hooks,
// DisableAfter) follows the circuit count (Counted).
func (n *Notifier) Recorded(ctx context.Context, rec *rdb.Record, o Outcome) {
	h := n.Hooks
	n.logOutcome(ctx, rec, o)
	if o.Attempted && h.AttemptFinished != nil {
		info := types.AttemptInfo{Delivery: rec.Delivery, StatusCode: o.Code, Duration: o.Duration, Error: o.Err}
		n.runHook("AttemptFinished", func() { h.AttemptFinished(info) })
	}
	switch {
	case rec.Status == types.StatusSuccess && h.DeliverySucceeded != nil:
		n.runHook("DeliverySucceeded", func() { h.DeliverySucceeded(rec.Delivery) })
	case rec.Status == types.StatusFailed && h.DeliveryFailed != nil:
		n.runHook("DeliveryFailed", func() { h.DeliveryFailed(rec.Delivery) })
	}
	if rec.Status == types.StatusFailed {
		n.deliveryFailed(ctx, rec)
	}
	if o.Disable {
		reason := "the endpoint answered 410 Gone"
		if o.Code != 410 {
			reason = "the destination says it is gone: " + strings.TrimSuffix(o.Err, ": the webhook was disabled")
		}
		n.disable(ctx, rec.WebhookID, reason, types.Health{}, writeKey(rec))
	}
}

// logOutcome logs a recorded outcome with the delivery's ids and attempt number: a success at debug
// level, a failed attempt at info, a delivery failed for good at warn. Secrets and bodies are never
// logged.
func (n *Notifier) logOutcome(ctx context.Context, rec *rdb.Record, o Outcome) {
	level, msg := slog.LevelInfo, "webhooks: attempt failed"
	switch {
	case rec.Status == types.StatusSuccess:
		level, msg = slog.LevelDebug, "webhooks: delivered"
	case rec.Status == types.StatusFailed:
		level, msg = slog.LevelWarn, "webhooks: delivery failed"
	case rec.Status == types.StatusSkipped:
		level, msg = slog.LevelDebug, "webhooks: skipped by the webhook's transformation"
	}
	if !n.Log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("delivery_id", rec.ID), slog.String("webhook_id", rec.WebhookID),
		slog.String("event_id", rec.EventID), slog.String("event_type", rec.EventType), slog.Int("attempt", rec.Attempts),
		slog.String("status", string(rec.Status))}
	if o.Attempted {
		attrs = append(attrs, slog.Int("status_code", o.Code), slog.Duration("duration", o.Duration))
	}
	if o.Err != "" {
		attrs = append(attrs, slog.String("error", o.Err))
	}
	if rec.Status == types.StatusPending {
		attrs = append(attrs, slog.Time("next_attempt_at", rec.NextAttemptAt))
	}
	n.Log.LogAttrs(ctx, level, msg, attrs...)
}

// Counted follows one outcome's count in webhook id's circuit at now (ev: the circuit as the count
// left it; failed: the outcome was a failure): it runs Hooks.CircuitOpened for a failure that opened
// the circuit (or a failed probe that reopened it) and Hooks.CircuitClosed for a success that closed
// it, sends their operational events, warns of a webhook failing, and disables one whose run of
// failures began Options.DisableAfter ago.
func (n *Notifier) Counted(ctx context.Context, id string, ev breaker.Event, failed bool, now time.Time) {
	h := ev.Health
	switch {
	case ev.Opened:
		n.Log.Warn("webhooks: circuit opened", "webhook_id", id, "failures", h.ConsecutiveFailures, "open_until", h.OpenUntil)
		if f := n.Hooks.CircuitOpened; f != nil {
			n.runHook("CircuitOpened", func() { f(id, h.OpenUntil) })
		}
		n.circuitChanged(ctx, types.EventCircuitOpened, id, h, now)
	case ev.Closed:
		n.Log.Info("webhooks: circuit closed", "webhook_id", id)
		if f := n.Hooks.CircuitClosed; f != nil {
			n.runHook("CircuitClosed", func() { f(id) })
		}
		n.circuitChanged(ctx, types.EventCircuitClosed, id, h, now)
	}
	if failed {
		n.warnIfFailing(ctx, id, h)
		n.disableIfFailingTooLong(ctx, id, h)
	}
}
