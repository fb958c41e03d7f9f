package webhooks

import (
	"context"

	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks/internal/rdb"
)

const (
	// maxHistoryBody is how much of a response body an attempt keeps.
	maxHistoryBody = 1 << 10
)

// DeliveryRepo reads delivery records.
type DeliveryRepo struct {
	rdb      redis.UniversalClient
	keys     rdb.Keys
	webhooks *WebhookRepo
}

// Get returns a delivery by id, or an error wrapping ErrNotFound.
func (r *DeliveryRepo) Get(ctx context.Context, id string) (*Delivery, error) {
	rec, err := r.get(ctx, id)
	if err != nil {
		return nil, err
	}
	return &rec.Delivery, nil
}

func (r *DeliveryRepo) get(ctx context.Context, id string) (*rdb.Record, error) {
	if err := loadKeys(ctx, r.keys, r.rdb); err != nil {
		return nil, err
	}
	shard, err := r.keys.DeliveryShard(id)
	if err != nil {
		return nil, err
	}
	raw, found, err := rdb.ReadRecord(ctx, r.rdb, r.keys, shard, id)
	if err != nil {
		return nil, fmt.Errorf("webhooks: read delivery %s: %w", id, err)
	}
	if !found {
		return nil, fmt.Errorf("%w: delivery %q", ErrNotFound, id)
	}
	return rdb.ParseRecord(id, raw)
}

// Find returns the delivery of a (webhook, event) pair, or an error wrapping ErrNotFound. The event id
// is read in the webhook's tenant (a deleted webhook's as if it had none).
func (r *DeliveryRepo) Find(ctx context.Context, webhookID, eventID string) (*Delivery, error) {
	tenant := ""
	if wh, _, err := r.webhooks.load(ctx, webhookID); err == nil {
		tenant = wh.Tenant
	}
	if err := loadKeys(ctx, r.keys, r.rdb); err != nil {
		return nil, err
	}
	scoped := rdb.ScopedEventID(tenant, eventID)
	d, err := r.Get(ctx, r.keys.DeliveryID(webhookID, scoped))
	if errors.Is(err, ErrNotFound) {
		d, err = r.findOrdered(ctx, tenant, webhookID, scoped)
	}
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: no delivery of event %q to webhook %q", ErrNotFound, eventID, webhookID)
	}
	return d, err
}

// List returns up to n of a webhook's retained deliveries, most recently created or redelivered
// first, or an error wrapping ErrNotFound for an unknown webhook. It is Page without a filter, read
// until n deliveries or the end.
func (r *DeliveryRepo) List(ctx context.Context, webhookID string, n int) ([]*Delivery, error) {
	var out []*Delivery
	q := DeliveryQuery{Limit: min(max(n, 1), MaxPageLimit)}
	for len(out) < n {
		page, err := r.Page(ctx, webhookID, q)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Deliveries[:min(len(page.Deliveries), n-len(out))]...)
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	return out, nil
}
