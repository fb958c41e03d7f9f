package webhooks

// Auto-disable: a webhook is disabled when it answers 410 Gone, or when its circuit's run of failed
// attempts (rdb.Count keeps it, with the breaker on or off) began Options.DisableAfter ago.

import (
	"context"
	"fmt"
	"time"
)

// disableIfFailingTooLong disables a webhook whose run of failed attempts, as the circuit counts it
// across every replica, began Options.DisableAfter ago or more: with the breaker on, this bounds how
// long deliveries wait parked (DisableAfter, plus one open period of at most MaxBreakFor).
func (d *Dispatcher) disableIfFailingTooLong(ctx context.Context, id string, h Health) {
	if d.opts.DisableAfter <= 0 || h.FailingSince.IsZero() || d.now().Sub(h.FailingSince) < d.opts.DisableAfter {
		return
	}
	d.disableWebhook(ctx, id, fmt.Sprintf("every attempt failed for %s", d.opts.DisableAfter), h, runKey(h))
}

// disableWebhook disables a webhook for a reason, logs it, runs the WebhookDisabled hook and sends
// webhook.disabled (keyed by key: the run of failures, or the delivery answered 410), once: a webhook
// already disabled is left as it is. h is its circuit, when the reason is its run of failures.
func (d *Dispatcher) disableWebhook(ctx context.Context, id, reason string, h Health, key string) {
	changed, err := d.webhooks.disable(ctx, id, reason)
	if err != nil {
		d.log.Error("webhooks: disable webhook", "webhook_id", id, "reason", reason, "error", err)
		return
	}
	if !changed {
		return
	}
	d.log.Warn("webhooks: webhook disabled", "webhook_id", id, "reason", reason)
	if f := d.opts.Hooks.WebhookDisabled; f != nil {
		d.runHook("WebhookDisabled", func() { f(id, reason) })
	}
	d.sendOperational(ctx, EventWebhookDisabled, id, key, d.now(), OperationalData{Reason: reason, FailingSince: h.FailingSince})
}

// operatorDisabled is the DisabledReason of a webhook a caller disabled without giving one.
const operatorDisabled = "disabled by an operator"

// stampDisabled keeps w's DisabledReason and DisabledAt true to its Disabled, was being the webhook
// before the change: cleared when it is enabled; stamped with now when it becomes disabled (the reason
// given, else operatorDisabled); while it stays disabled, DisabledAt as it was and the reason as given
// (else as it was).
func stampDisabled(was, w *Webhook, now time.Time) {
	switch {
	case !w.Disabled:
		w.DisabledReason, w.DisabledAt = "", time.Time{}
	case !was.Disabled:
		w.DisabledAt = now
		if w.DisabledReason == "" {
			w.DisabledReason = operatorDisabled
		}
	default:
		w.DisabledAt = was.DisabledAt
		if w.DisabledReason == "" {
			w.DisabledReason = was.DisabledReason
		}
	}
}
