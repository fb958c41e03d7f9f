package admin

// Retry now: a pending delivery's next attempt moved to now, and the body a delivery sends.

import (
	"context"
	"fmt"

	"github.com/smartdrop/webhooks/internal/ratelimit"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// Retry is the Dispatcher's RetryNow: it makes a pending delivery due now, for the next worker (of any
// replica) to attempt, and returns it as it stood (with the error, when refused). A delivery that is
// not pending, in flight, held back, or whose webhook's circuit is open (a probe decides) is refused
// with an error wrapping types.ErrNotRetryable; an unknown one with types.ErrNotFound. Each call takes
// a slot of the webhook's and its tenant's retry limiters first (ratelimit.Retries): refused, it wraps
// types.ErrActionsLimited and changes nothing.
func (b *Backend) Retry(ctx context.Context, deliveryID string) (*types.Delivery, error) {
	rec, err := b.DeliveryRepo.Record(ctx, deliveryID)
	if err != nil {
		return nil, err
	}
	return &rec.Delivery, b.retry(ctx, rec)
}

// retry makes the pending delivery of rec due now (Retry).
func (b *Backend) retry(ctx context.Context, rec *rdb.Record) error {
	wh, err := b.WebhookRepo.Stored(ctx, rec.WebhookID)
	if err != nil {
		return err
	}
	if err := ratelimit.Retries.Take(ctx, b.Client, b.Keys, wh.ID, wh.Tenant); err != nil {
		return err
	}
	hs, err := b.Breaker.Read(ctx, b.Now(), rec.WebhookID)
	if err != nil {
		return fmt.Errorf("webhooks: read circuit of %s: %w", rec.WebhookID, err)
	}
	if h := hs[rec.WebhookID]; h.State != "" && h.State != types.CircuitClosed {
		return fmt.Errorf("%w: the endpoint is paused after failed attempts: its deliveries wait for its next try", types.ErrNotRetryable)
	}
	shard, err := b.Keys.DeliveryShard(rec.ID)
	if err != nil {
		return err
	}
	n, err := rdb.RetryDeliveryNow(ctx, b.Client, b.Keys, shard, rec.ID, rec.WebhookID, b.Now())
	if err != nil {
		return fmt.Errorf("webhooks: retry %s: %w", rec.ID, err)
	}
	switch n {
	case rdb.RetryGone:
		return fmt.Errorf("%w: delivery %q", types.ErrNotFound, rec.ID)
	case rdb.RetryNotPending:
		return fmt.Errorf("%w: only a pending delivery is retried now (Redeliver sends a failed one again)", types.ErrNotRetryable)
	case rdb.RetryInFlight:
		return fmt.Errorf("%w: an attempt is in flight", types.ErrNotRetryable)
	case rdb.RetryNotQueued:
		return fmt.Errorf("%w: it waits for an earlier delivery", types.ErrNotRetryable)
	}
	return nil
}

// eventBody is the body a delivery of a webhook of tenant sends ({"id", "type", "timestamp",
// "data"}), or nil once it expired.
func (b *Backend) eventBody(ctx context.Context, dl *types.Delivery, tenant string) ([]byte, error) {
	shard, err := b.Keys.DeliveryShard(dl.ID)
	if err != nil {
		return nil, err
	}
	return rdb.ReadEventBody(ctx, b.Client, b.Keys, shard, rdb.ScopedEventID(tenant, dl.EventID), dl.OrderKey != "")
}
