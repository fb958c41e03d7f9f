package notify

// Auto-disable: a webhook is disabled when it answers 410 Gone, or when its circuit's run of failed
// attempts (rdb.Count keeps it, with the breaker on or off) began Options.DisableAfter ago.

import (
	"context"
	"fmt"

	"github.com/smartdrop/webhooks/internal/types"
)

// disableIfFailingTooLong disables a webhook whose run of failed attempts, as the circuit counts it
// across every replica, began Options.DisableAfter ago or more: with the breaker on, this bounds how
// long deliveries wait parked (DisableAfter, plus one open period of at most MaxBreakFor).
func (n *Notifier) disableIfFailingTooLong(ctx context.Context, id string, h types.Health) {
	if n.DisableAfter <= 0 || h.FailingSince.IsZero() || n.Now().Sub(h.FailingSince) < n.DisableAfter {
		return
	}
	n.disable(ctx, id, fmt.Sprintf("every attempt failed for %s", n.DisableAfter), h, runKey(h))
}

// disable disables a webhook for a reason, logs it, runs the WebhookDisabled hook and sends
// webhook.disabled (keyed by key: the run of failures, or the delivery answered 410), once: a webhook
// already disabled is left as it is. h is its circuit, when the reason is its run of failures.
func (n *Notifier) disable(ctx context.Context, id, reason string, h types.Health, key string) {
	changed, err := n.Webhooks.Disable(ctx, id, reason)
	if err != nil {
		n.Log.Error("webhooks: disable webhook", "webhook_id", id, "reason", reason, "error", err)
		return
	}
	if !changed {
		return
	}
	n.Log.Warn("webhooks: webhook disabled", "webhook_id", id, "reason", reason)
	if f := n.Hooks.WebhookDisabled; f != nil {
		n.runHook("WebhookDisabled", func() { f(id, reason) })
	}
	n.send(ctx, types.EventWebhookDisabled, id, key, n.Now(), types.OperationalData{Reason: reason, FailingSince: h.FailingSince})
}
