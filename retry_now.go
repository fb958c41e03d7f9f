package webhooks

// Retry now: a pending delivery's next attempt moved to now, and the payload of a delivery, for the
// admin API (Handler lists the routes).

import (
	"context"
	"errors"
	"fmt"

	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
)

// RetryNow makes a pending delivery due now, for the next worker (of any replica) to attempt, instead
// of at its scheduled retry, and returns it as it stood. A delivery that is not pending, in flight,
// waiting behind an earlier delivery of its order key, or whose webhook's circuit is open is refused
// with an error wrapping ErrNotRetryable; an unknown one with ErrNotFound.
func (d *Dispatcher) RetryNow(ctx context.Context, deliveryID string) (*Delivery, error) {
	rec, err := d.deliveries.get(ctx, deliveryID)
	if err != nil {
		return nil, err
	}
	if err := d.retryNow(ctx, rec); err != nil {
		return &rec.Delivery, err
	}
	return &rec.Delivery, nil
}

// retryNow makes a pending delivery due now, for the next worker to attempt. A delivery that is not
// pending, in flight, held back, or whose webhook's circuit is open (a probe decides) is refused with
// an error wrapping ErrNotRetryable.
func (d *Dispatcher) retryNow(ctx context.Context, rec *rdb.Record) error {
	if _, _, err := d.webhooks.load(ctx, rec.WebhookID); err != nil {
		return err
	}
	hs, err := d.breaker.Read(ctx, d.now(), rec.WebhookID)
	if err != nil {
		return fmt.Errorf("webhooks: read circuit of %s: %w", rec.WebhookID, err)
	}
	if h := hs[rec.WebhookID]; h.State != "" && h.State != CircuitClosed {
		return fmt.Errorf("%w: the endpoint is paused (its circuit is open); its next try is a probe", ErrNotRetryable)
	}
	shard, err := deliveryShard(d.keys, rec.ID)
	if err != nil {
		return fmt.Errorf("%w: delivery %q", ErrNotFound, rec.ID)
	}
	keys := []string{d.keys.Delivery(shard, rec.ID), d.keys.Ready(shard), d.keys.Queue(shard, rec.WebhookID)}
	n, err := rdb.RetryNow.Run(ctx, d.rdb, keys, d.now().UnixMilli(), rec.ID, rec.WebhookID).Int()
	if err != nil {
		return fmt.Errorf("webhooks: retry %s: %w", rec.ID, err)
	}
	switch n {
	case rdb.RetryGone:
		return fmt.Errorf("%w: delivery %q", ErrNotFound, rec.ID)
	case rdb.RetryNotPending:
		return fmt.Errorf("%w: only a pending delivery is retried now (Redeliver sends a failed one again)", ErrNotRetryable)
	case rdb.RetryInFlight:
		return fmt.Errorf("%w: an attempt is in flight", ErrNotRetryable)
	case rdb.RetryNotQueued:
		return fmt.Errorf("%w: it waits for an earlier delivery", ErrNotRetryable)
	}
	return nil
}

// payload is the body a delivery sends ({"id", "type", "timestamp", "data"}), or nil once it expired.
func (d *Dispatcher) payload(ctx context.Context, rec *Delivery, tenant string) ([]byte, error) {
	shard, err := deliveryShard(d.keys, rec.ID)
	if err != nil {
		return nil, fmt.Errorf("%w: delivery %q", ErrNotFound, rec.ID)
	}
	key := d.keys.Event(shard, rdb.ScopedEventID(tenant, rec.EventID))
	if rec.OrderKey != "" {
		key = d.keys.OrderedEvent(shard, rdb.ScopedEventID(tenant, rec.EventID))
	}
	stored, err := d.rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return rdb.EventBody(stored), nil
}
