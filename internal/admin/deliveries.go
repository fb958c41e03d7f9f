package admin

// The delivery routes (Handler lists every route): a delivery within a request's scope, its detail,
// and the actions on it.

import (
	"context"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/types"
)

// Delivery is a delivery with when it was redelivered (redeliveries) and, when ordered, its place in
// its key's sequence (Deliveries.Position), when it can be read.
func (b *Backend) Delivery(ctx context.Context, s api.Scope, id string) (*api.DeliveryDetail, error) {
	dl, err := b.delivery(ctx, s, id)
	if err != nil {
		return nil, err
	}
	views, err := b.viewDeliveries(ctx, nil, []*types.Delivery{dl})
	if err != nil {
		return nil, err
	}
	detail := &api.DeliveryDetail{DeliveryView: views[0]}
	if detail.RedeliveredAt, err = b.redeliveries(ctx, dl); err != nil {
		return nil, err
	}
	if dl.OrderKey != "" {
		if pos, err := b.DeliveryRepo.Position(ctx, dl.ID); err == nil {
			detail.OrderPosition = &pos
		}
	}
	return detail, nil
}

// Redeliver sends a delivery again within a scope (POST /deliveries/{id}/redeliver).
func (b *Backend) Redeliver(ctx context.Context, s api.Scope, id string) (*types.Delivery, error) {
	if _, err := b.delivery(ctx, s, id); err != nil {
		return nil, err
	}
	return b.Actions.Redeliver(ctx, id)
}

// RetryNow makes a pending delivery's next attempt due now (POST /deliveries/{id}/retry).
func (b *Backend) RetryNow(ctx context.Context, s api.Scope, id string) (*types.Delivery, error) {
	if _, err := b.delivery(ctx, s, id); err != nil {
		return nil, err
	}
	return b.Retry(ctx, id)
}

// Payload is the request body a delivery sends (GET /deliveries/{id}/payload).
func (b *Backend) Payload(ctx context.Context, s api.Scope, id string) ([]byte, error) {
	dl, err := b.delivery(ctx, s, id)
	if err != nil {
		return nil, err
	}
	tenant := ""
	if wh, err := b.WebhookRepo.Stored(ctx, dl.WebhookID); err == nil {
		tenant = wh.Tenant
	}
	return b.eventBody(ctx, dl, tenant)
}

// OrderQueue is an ordered delivery's key's queue, within a scope.
func (b *Backend) OrderQueue(ctx context.Context, s api.Scope, id string) (*api.OrderQueue, error) {
	dl, err := b.delivery(ctx, s, id)
	if err != nil {
		return nil, err
	}
	return b.orderQueue(ctx, dl)
}
