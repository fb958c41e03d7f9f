package webhooks

// The admin API's delivery routes, as the root answers them (Handler lists every route).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/api"
)

func (b adminBackend) SendTest(ctx context.Context, s api.Scope, id string) ([]byte, bool, error) {
	if _, err := b.webhook(ctx, s, id); err != nil {
		return nil, false, err
	}
	return deferredAnswer(b.d.SendTest(ctx, id))
}

// deferredAnswer is a delivery's JSON and whether its attempt was left to the worker (ErrDeferred).
func deferredAnswer(dl *Delivery, err error) ([]byte, bool, error) {
	deferred := errors.Is(err, ErrDeferred) && dl != nil
	if deferred {
		err = nil // created or reset, and scheduled; a worker makes the attempt
	}
	out, err := encode(dl, err)
	return out, deferred, err
}

func (b adminBackend) Deliveries(ctx context.Context, s api.Scope, id string, q api.DeliveryQuery) ([]byte, error) {
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
	return encode(struct {
		Deliveries []deliveryView `json:"deliveries"`
		NextCursor string         `json:"next_cursor,omitempty"`
	}{views, page.NextCursor}, err)
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

func (b adminBackend) Delivery(ctx context.Context, s api.Scope, id string) ([]byte, error) {
	dl, err := b.delivery(ctx, s, id)
	if err != nil {
		return nil, err
	}
	views, err := b.d.viewDeliveries(ctx, nil, []*Delivery{dl})
	if err != nil {
		return nil, err
	}
	detail := deliveryDetail{deliveryView: views[0]}
	if detail.RedeliveredAt, err = b.d.redeliveries(ctx, dl); err != nil {
		return nil, err
	}
	if dl.OrderKey == "" {
		return encode(detail, nil)
	}
	return encode(b.orderedDetail(ctx, detail), nil)
}

// deliveryDetail is a delivery as the detail route shows it: with when it was redelivered, as far as
// its index shows (redeliveries).
type deliveryDetail struct {
	deliveryView
	RedeliveredAt []time.Time `json:"redelivered_at,omitempty"`
}

// orderedDeliveryDetail is an ordered delivery as the detail route shows it: with its place in its
// key's sequence (DeliveryRepo.Position: 0 for the head, -1 for none).
type orderedDeliveryDetail struct {
	deliveryDetail
	OrderPosition int `json:"order_position"`
}

// orderedDetail is an ordered delivery with its position, when it can be read.
func (b adminBackend) orderedDetail(ctx context.Context, dl deliveryDetail) any {
	pos, err := b.d.deliveries.Position(ctx, dl.ID)
	if err != nil {
		return dl
	}
	return orderedDeliveryDetail{deliveryDetail: dl, OrderPosition: pos}
}

func (b adminBackend) Redeliver(ctx context.Context, s api.Scope, id string) ([]byte, bool, error) {
	if _, err := b.delivery(ctx, s, id); err != nil {
		return nil, false, err
	}
	return deferredAnswer(b.d.Redeliver(ctx, id))
}

func (b adminBackend) Replay(ctx context.Context, s api.Scope, id string, since time.Time, cursor string) (int, string, error) {
	if _, err := b.webhook(ctx, s, id); err != nil {
		return 0, "", err
	}
	p, err := b.d.ReplayMissingPage(ctx, id, since, cursor)
	return p.Scheduled, p.Next, err
}

func (b adminBackend) RetryNow(ctx context.Context, s api.Scope, id string) ([]byte, error) {
	if _, err := b.delivery(ctx, s, id); err != nil {
		return nil, err
	}
	rec, err := b.d.deliveries.get(ctx, id)
	if err != nil {
		return nil, err
	}
	return encode(&rec.Delivery, b.d.retryNow(ctx, rec))
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
	body, err := b.d.payload(ctx, dl, tenant)
	if err != nil {
		return nil, err
	}
	if !json.Valid(body) {
		body = nil // expired (or not JSON): null
	}
	return encode(struct {
		Payload json.RawMessage `json:"payload"`
	}{body}, nil)
}
