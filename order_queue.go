package webhooks

// An ordered delivery's queue: the deliveries of its (webhook, order key) in the order they are
// attempted, head first, for the admin API's GET /deliveries/{id}/queue (the UI's view of a key, from
// a delivery's detail). Read from the key's sequence list (ordered.go), which every delivery of the key
// shares with its records in one slot: two round trips, at most orderQueueShown records.

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/rdb"
)

// orderQueueShown bounds the deliveries GET /deliveries/{id}/queue returns: the head and those next.
const orderQueueShown = 50

// orderQueueOf reads an ordered delivery's key's queue: LLEN and LRANGE of its sequence, then the
// records, each in one round trip. A delivery with no order key is refused (api.ErrBadRequest).
func (d *Dispatcher) orderQueueOf(ctx context.Context, dl *Delivery) (*api.OrderQueue, error) {
	if dl.OrderKey == "" {
		return nil, fmt.Errorf("%w: delivery %s has no order key", api.ErrBadRequest, dl.ID)
	}
	shard, err := deliveryShard(d.keys, dl.ID)
	if err != nil {
		return nil, fmt.Errorf("%w: delivery %q", ErrNotFound, dl.ID)
	}
	seq := d.keys.Seq(shard, dl.WebhookID, dl.OrderKey)
	pipe := d.rdb.Pipeline()
	n, ids := pipe.LLen(ctx, seq), pipe.LRange(ctx, seq, 0, orderQueueShown-1)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("webhooks: read the order key of %s: %w", dl.ID, err)
	}
	q := &api.OrderQueue{OrderKey: dl.OrderKey, Length: n.Val(), Deliveries: []*Delivery{}}
	if len(ids.Val()) == 0 {
		return q, nil
	}
	pipe = d.rdb.Pipeline()
	gets := make([]*redis.StringCmd, len(ids.Val()))
	for i, id := range ids.Val() {
		gets[i] = pipe.Get(ctx, d.keys.Delivery(shard, id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("webhooks: read the order key of %s: %w", dl.ID, err)
	}
	for i, id := range ids.Val() {
		raw, err := gets[i].Result()
		if err != nil {
			continue // expired meanwhile
		}
		if rec, err := rdb.ParseRecord(id, raw); err == nil {
			rec.History = nil
			q.Deliveries = append(q.Deliveries, &rec.Delivery)
		}
	}
	return q, nil
}

// OrderQueue is an ordered delivery's key's queue (orderQueueOf), within a scope.
func (b adminBackend) OrderQueue(ctx context.Context, s api.Scope, id string) (*api.OrderQueue, error) {
	dl, err := b.delivery(ctx, s, id)
	if err != nil {
		return nil, err
	}
	return b.d.orderQueueOf(ctx, dl)
}
