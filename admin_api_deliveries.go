package webhooks

// The admin API's delivery routes, as the root answers them (Handler lists every route).

import (
	"context"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/api"
)

func (b adminBackend) SendTest(ctx context.Context, s api.Scope, id string) (*Delivery, error) {
	if _, err := b.webhook(ctx, s, id); err != nil {
		return nil, err
	}
	return b.d.SendTest(ctx, id)
}

func (b adminBackend) Deliveries(ctx context.Context, s api.Scope, id string, q api.DeliveryQuery) (*api.DeliveryPage, error) {
	wh, err := b.webhook(ctx, s, id)
	if err != nil {
		return nil, err
	}
	page, err := b.d.deliveries.Page(ctx, id, DeliveryQuery{Status: Status(q.Status), Cursor: q.Cursor, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	for _, dl := range page.Deliveries {
		dl.History = nil // GET /deliveries/{id} has it
	}
	views, err := b.d.viewDeliveries(ctx, map[string]*Webhook{id: wh}, page.Deliveries)
	return &api.DeliveryPage{Deliveries: views, NextCursor: page.NextCursor}, err
}

func (b adminBackend) Recover(ctx context.Context, s api.Scope, id string, since, until time.Time, limit int) (int, error) {
	if _, err := b.webhook(ctx, s, id); err != nil {
		return 0, err
	}
	if until.IsZero() {
		until = b.d.now()
	}
	return b.d.Recover(ctx, id, since, until, limit)
}

// delivery reads a delivery within a scope: in the portal, only one of its tenant's webhooks.
func (b adminBackend) delivery(ctx context.Context, s api.Scope, id string) (*Delivery, error) {
	dl, err := b.d.deliveries.Get(ctx, id)
	if err != nil || !s.Restricted {
		return dl, err
	}
	if _, err := b.webhook(ctx, s, dl.WebhookID); err != nil {
		return nil, fmt.Errorf("%w: delivery %q", ErrNotFound, id)
	}
	return dl, nil
}

// Delivery is a delivery with when it was redelivered (redeliveries) and, when ordered, its place in
// its key's sequence (DeliveryRepo.Position), when it can be read.
func (b adminBackend) Delivery(ctx context.Context, s api.Scope, id string) (*api.DeliveryDetail, error) {
	dl, err := b.delivery(ctx, s, id)
	if err != nil {
		return nil, err
	}
	views, err := b.d.viewDeliveries(ctx, nil, []*Delivery{dl})
	if err != nil {
		return nil, err
	}
	detail := &api.DeliveryDetail{DeliveryView: views[0]}
	if detail.RedeliveredAt, err = b.d.redeliveries(ctx, dl); err != nil {
		return nil, err
	}
	if dl.OrderKey != "" {
		if pos, err := b.d.deliveries.Position(ctx, dl.ID); err == nil {
			detail.OrderPosition = &pos
		}
	}
	return detail, nil
}

func (b adminBackend) Redeliver(ctx context.Context, s api.Scope, id string) (*Delivery, error) {
	if _, err := b.delivery(ctx, s, id); err != nil {
		return nil, err
	}
	return b.d.Redeliver(ctx, id)
}

func (b adminBackend) Replay(ctx context.Context, s api.Scope, id string, since time.Time, cursor string) (int, string, error) {
	if _, err := b.webhook(ctx, s, id); err != nil {
		return 0, "", err
	}
	p, err := b.d.ReplayMissingPage(ctx, id, since, cursor)
	return p.Scheduled, p.Next, err
}

func (b adminBackend) RetryNow(ctx context.Context, s api.Scope, id string) (*Delivery, error) {
	if _, err := b.delivery(ctx, s, id); err != nil {
		return nil, err
	}
	rec, err := b.d.deliveries.get(ctx, id)
	if err != nil {
		return nil, err
	}
	return &rec.Delivery, b.d.retryNow(ctx, rec)
}

func (b adminBackend) Payload(ctx context.Context, s api.Scope, id string) ([]byte, error) {
	dl, err := b.delivery(ctx, s, id)
	if err != nil {
		return nil, err
	}
	tenant := ""
	if wh, _, err := b.d.webhooks.load(ctx, dl.WebhookID); err == nil {
		tenant = wh.Tenant
	}
	return b.d.payload(ctx, dl, tenant)
}
