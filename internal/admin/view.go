package admin

// The state model of the admin API's answers: a delivery as every route answers it (its record, with
// its next attempt and why it waits, true to its webhook's state now: api.ViewDelivery, from the
// states read here), so that no answer contradicts another. An endpoint is active, paused (its
// circuit is open: after how many failed attempts, until when) or disabled (Webhook.DisabledReason,
// DisabledAt); GET /webhooks/{id}/health says "disabled" for a disabled webhook, whatever its circuit
// last counted (api.ViewHealth), and its counts park nothing.

import (
	"context"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/types"
)

// endpointStates reads the state of the webhooks of dls: hooks holds those already read (by id); the
// others are read, and all their circuits in one HMGET. A webhook gone since is left out.
func (b *Backend) endpointStates(ctx context.Context, hooks map[string]*types.Webhook, dls []*types.Delivery) (map[string]api.Endpoint, error) {
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
	circuits, err := b.Breaker.Read(ctx, b.Now(), ids...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]api.Endpoint, len(ids))
	for _, id := range ids {
		wh := hooks[id]
		if wh == nil {
			if wh, err = b.WebhookRepo.Get(ctx, id); err != nil {
				continue
			}
		}
		out[id] = api.Endpoint{Disabled: wh.Disabled, DisabledReason: wh.DisabledReason, Health: circuits[id]}
	}
	return out, nil
}

// viewDeliveries is dls as the admin API answers them (api.ViewDelivery), their webhooks' states read
// (endpointStates; hooks: those already read).
func (b *Backend) viewDeliveries(ctx context.Context, hooks map[string]*types.Webhook, dls []*types.Delivery) ([]api.DeliveryView, error) {
	states, err := b.endpointStates(ctx, hooks, dls)
	if err != nil {
		return nil, err
	}
	out := make([]api.DeliveryView, len(dls))
	for i, dl := range dls {
		st, ok := states[dl.WebhookID]
		out[i] = api.ViewDelivery(dl, st, ok, b.Now())
	}
	return out, nil
}
