package webhooks

// The state model of the admin API's answers: a delivery as every route answers it (its record, with
// its next attempt and why it waits, true to its webhook's state now: api.ViewDelivery, from the
// states read here), so that no answer contradicts another. An endpoint is active, paused (its circuit is open: after how many failed attempts, until
// when) or disabled (Webhook.DisabledReason, DisabledAt); GET /webhooks/{id}/health says "disabled"
// for a disabled webhook, whatever its circuit last counted, and its counts park nothing.

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/api"
)

// endpointStates reads the state of the webhooks of dls: hooks holds those already read (by id); the
// others are read, and all their circuits in one HMGET. A webhook gone since is left out.
func (d *Dispatcher) endpointStates(ctx context.Context, hooks map[string]*Webhook, dls []*Delivery) (map[string]api.Endpoint, error) {
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
	circuits, err := d.breaker.Read(ctx, d.now(), ids...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]api.Endpoint, len(ids))
	for _, id := range ids {
		wh := hooks[id]
		if wh == nil {
			if wh, err = d.webhooks.Get(ctx, id); err != nil {
				continue
			}
		}
		out[id] = api.Endpoint{Disabled: wh.Disabled, DisabledReason: wh.DisabledReason, Health: circuits[id]}
	}
	return out, nil
}

// viewDeliveries is dls as the admin API answers them (api.ViewDelivery), their webhooks' states read
// (endpointStates; hooks: those already read).
func (d *Dispatcher) viewDeliveries(ctx context.Context, hooks map[string]*Webhook, dls []*Delivery) ([]api.DeliveryView, error) {
	states, err := d.endpointStates(ctx, hooks, dls)
	if err != nil {
		return nil, err
	}
	out := make([]api.DeliveryView, len(dls))
	for i, dl := range dls {
		st, ok := states[dl.WebhookID]
		out[i] = api.ViewDelivery(dl, st, ok, d.now())
	}
	return out, nil
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
