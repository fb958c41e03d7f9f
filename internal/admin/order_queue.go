package admin

// An ordered delivery's queue: the deliveries of its (webhook, order key) in the order they are
// attempted, head first, for the admin API's GET /deliveries/{id}/queue (the UI's view of a key, from
// a delivery's detail). Read from the key's sequence list (Keys.Seq), which every delivery of the
// key shares with its records in one slot: two round trips, at most orderQueueShown records.

import (
	"context"
	"fmt"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// orderQueueShown bounds the deliveries GET /deliveries/{id}/queue returns: the head and those next.
const orderQueueShown = 50

// orderQueue reads an ordered delivery's key's queue: LLEN and LRANGE of its sequence, then the
// records, each in one round trip. A delivery with no order key is refused (api.ErrBadRequest).
func (b *Backend) orderQueue(ctx context.Context, dl *types.Delivery) (*api.OrderQueue, error) {
	if dl.OrderKey == "" {
		return nil, fmt.Errorf("%w: delivery %s has no order key", api.ErrBadRequest, dl.ID)
	}
	shard, err := b.Keys.DeliveryShard(dl.ID)
	if err != nil {
		return nil, err
	}
	n, ids, err := rdb.ReadSeq(ctx, b.Client, b.Keys, shard, dl.WebhookID, dl.OrderKey, orderQueueShown)
	if err != nil {
		return nil, err
	}
	q := &api.OrderQueue{OrderKey: dl.OrderKey, Length: n, Deliveries: []*types.Delivery{}}
	if len(ids) == 0 {
		return q, nil
	}
	recs, err := rdb.ReadRecords(ctx, b.Client, b.Keys, shard, ids)
	if err != nil {
		return nil, fmt.Errorf("webhooks: read the order key of %s: %w", dl.ID, err)
	}
	for _, rec := range recs {
		if rec != nil { // nil: expired meanwhile
			rec.History = nil
			q.Deliveries = append(q.Deliveries, &rec.Delivery)
		}
	}
	return q, nil
}
