package webhooks

// The state model of the admin API's answers: a delivery as every route answers it (its record, with
// its next attempt and why it waits, true to its webhook's state now), so that no answer contradicts
// another. An endpoint is active, paused (its circuit is open: after how many failed attempts, until
// when) or disabled (Webhook.DisabledReason, DisabledAt); GET /webhooks/{id}/health says "disabled"
// for a disabled webhook, whatever its circuit last counted, and its counts park nothing.

import (
	"context"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/api"
)

// endpointState is what a delivery's answer needs of its webhook now.
type endpointState struct {
	disabled bool
	reason   string // Webhook.DisabledReason
	health   Health
}

// endpointStates reads the state of the webhooks of dls: hooks holds those already read (by id); the
// others are read, and all their circuits in one HMGET. A webhook gone since is left out.
func (d *Dispatcher) endpointStates(ctx context.Context, hooks map[string]*Webhook, dls []*Delivery) (map[string]endpointState, error) {
	var ids []string
	seen := map[string]bool{}
	for _, dl := range dls {
		if !seen[dl.WebhookID] {
			seen[dl.WebhookID] = true
			ids = append(ids, dl.WebhookID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	circuits, err := d.circuits.read(ctx, d.now(), ids...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]endpointState, len(ids))
	for _, id := range ids {
		wh := hooks[id]
		if wh == nil {
			if wh, err = d.webhooks.Get(ctx, id); err != nil {
				continue
			}
		}
		out[id] = endpointState{disabled: wh.Disabled, reason: wh.DisabledReason, health: circuits[id]}
	}
	return out, nil
}

// viewDeliveries is dls as the admin API answers them (api.DeliveryView), their webhooks' states read
// (endpointStates; hooks: those already read).
func (d *Dispatcher) viewDeliveries(ctx context.Context, hooks map[string]*Webhook, dls []*Delivery) ([]api.DeliveryView, error) {
	states, err := d.endpointStates(ctx, hooks, dls)
	if err != nil {
		return nil, err
	}
	out := make([]api.DeliveryView, len(dls))
	for i, dl := range dls {
		st, ok := states[dl.WebhookID]
		out[i] = viewDelivery(dl, st, ok, d.now())
	}
	return out, nil
}

// viewDelivery is dl as the admin API answers it, its webhook's state st (known: ok) at now.
func viewDelivery(dl *Delivery, st endpointState, ok bool, now time.Time) api.DeliveryView {
	v := api.DeliveryView{Delivery: dl}
	switch dl.Status {
	case StatusFailed:
		if dl.Attempts == 0 {
			v.Why = "never attempted: " + dl.LastError
		}
		return v
	case StatusPending:
	default:
		return v
	}
	switch {
	case !ok:
	case st.disabled:
		v.NextAttemptAt = time.Time{}
		v.Why = "not to be attempted: the endpoint is disabled (" + st.reason + "); the delivery fails without an attempt"
		return v
	case st.health.State == CircuitOpen || st.health.State == CircuitProbing:
		v.NextAttemptAt = later(dl.NextAttemptAt, st.health.OpenUntil)
		v.Why = fmt.Sprintf("waiting: the endpoint is paused after %d failed attempts in a row, until %s (UTC); nothing is sent to it before",
			st.health.ConsecutiveFailures, st.health.OpenUntil.UTC().Format(time.DateTime))
		return v
	}
	if dl.Attempts == 0 && dl.OrderKey != "" {
		v.Why = "not attempted yet: sent in its turn, after the earlier deliveries of order key " + dl.OrderKey
	} else if dl.Attempts == 0 {
		v.Why = "not attempted yet: due at " + dl.NextAttemptAt.UTC().Format(time.DateTime) + " (UTC)"
		if !dl.NextAttemptAt.After(now) {
			v.Why = "not attempted yet: due now, waiting for a worker"
		}
	}
	return v
}

// viewHealth is a webhook's circuit as the admin API answers it: a disabled webhook's is "disabled",
// with no next probe (none goes out), its run of failures kept (why it was disabled, when it was by
// that rule).
func viewHealth(wh *Webhook, h *Health) *Health {
	if h != nil && wh.Disabled {
		h.State, h.OpenUntil, h.OpenFor = CircuitDisabled, time.Time{}, 0
	}
	return h
}
