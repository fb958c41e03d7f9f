package admin

// The delivery routes (Handler lists every route): a delivery within a request's scope, its detail,
// and the actions on it.

import (
	"context"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/rdb"
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
	if detail.PayloadGone, err = b.payloadGone(ctx, dl); err != nil {
		return nil, err
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

// Payload is the request body a delivery sends (GET /deliveries/{id}/payload), and whether it is the
// event as its webhook's transformation reshapes it now: not for a skipped delivery (it shows the
// event the transformation saw), nor when the transformation fails on the event (nothing was sent);
// or, once it expired, when (PayloadGone).
func (b *Backend) Payload(ctx context.Context, s api.Scope, id string) (*api.PayloadView, error) {
	dl, err := b.delivery(ctx, s, id)
	if err != nil {
		return nil, err
	}
	wh, err := b.WebhookRepo.Stored(ctx, dl.WebhookID)
	if err != nil {
		wh = nil
	}
	tenant := ""
	if wh != nil {
		tenant = wh.Tenant
	}
	body, err := b.eventBody(ctx, dl, tenant)
	if err != nil {
		return nil, err
	}
	if body == nil {
		return &api.PayloadView{PayloadGone: b.gone(dl)}, nil
	}
	if wh == nil || wh.Transform == "" || dl.Status == types.StatusSkipped {
		return &api.PayloadView{Payload: body}, nil // a skipped delivery shows the event the transformation saw
	}
	if sent, skip, err := b.Reshape(ctx, wh, body); err == nil && !skip {
		return &api.PayloadView{Payload: sent, Transformed: true}, nil // what its webhook's transformation makes of it, as an attempt sends it now
	}
	return &api.PayloadView{Payload: body}, nil
}

// gone is what the API says of a delivery whose payload is no longer stored.
func (b *Backend) gone(dl *types.Delivery) api.PayloadGone {
	return api.Gone(types.PayloadExpiry(dl.CreatedAt, b.PayloadRetention))
}

// payloadGone is what the API says of a delivery's payload once it is no longer stored (zero while
// it is): one EXISTS.
func (b *Backend) payloadGone(ctx context.Context, dl *types.Delivery) (api.PayloadGone, error) {
	tenant := ""
	if wh, err := b.WebhookRepo.Stored(ctx, dl.WebhookID); err == nil {
		tenant = wh.Tenant
	}
	shard, err := b.Keys.DeliveryShard(dl.ID)
	if err != nil {
		return api.PayloadGone{}, err
	}
	stored, err := rdb.EventStored(ctx, b.Client, b.Keys, shard, rdb.ScopedEventID(tenant, dl.EventID), dl.OrderKey != "")
	if err != nil || stored {
		return api.PayloadGone{}, err
	}
	return b.gone(dl), nil
}

// OrderQueue is an ordered delivery's key's queue, within a scope.
func (b *Backend) OrderQueue(ctx context.Context, s api.Scope, id string) (*api.OrderQueue, error) {
	dl, err := b.delivery(ctx, s, id)
	if err != nil {
		return nil, err
	}
	return b.orderQueue(ctx, dl)
}
