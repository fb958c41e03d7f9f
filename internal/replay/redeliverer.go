package replay

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/ratelimit"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
	"github.com/smartdrop/webhooks/internal/worker"
)

// ResendQuiet is how long after its last attempt a delivery that succeeded is not sent again.
const ResendQuiet = 5 * time.Second

// Records is the delivery records as Redeliverer reads them.
type Records interface {
	// Record reads a delivery's record; an unknown one wraps types.ErrNotFound.
	Record(ctx context.Context, id string) (*rdb.Record, error)
}

// Redeliverer sends a delivery again (the Dispatcher's Redeliver). Every field is set by the
// Dispatcher that holds it.
type Redeliverer struct {
	Client    redis.UniversalClient
	Keys      rdb.Keys
	Records   Records
	Webhooks  Webhooks
	Flights   *worker.InFlight // the in-flight limits, floor Concurrency/4
	Log       *slog.Logger
	Now       func() time.Time
	Lease     time.Duration // the attempt's lease
	Retention time.Duration // Options.Retention: a reset record is kept that long from now
	// TestRetention is how long a reset test send's record is kept from now (TestSendRetention, or
	// Retention when shorter): a test send resent keeps its short retention.
	TestRetention time.Duration
	// PayloadRetention is Options.PayloadRetention: when set, a reset leaves the event's body to
	// expire when it would have (else it is kept Retention from now), and a delivery whose body has
	// gone is refused with types.ErrPayloadExpired.
	PayloadRetention time.Duration
	// MarkerTTL is how long an ordered event's marker is kept: a little longer than its records.
	MarkerTTL time.Duration
	// Attempt makes the attempt of a delivery the reset leased, and records its outcome.
	Attempt func(ctx context.Context, shard int, rec *rdb.Record, wh *rdb.WebhookRecord, body []byte) error
}

// Redeliver sends a delivery again: a failed one, or one that succeeded, unordered, at least
// ResendQuiet ago, which is reset to pending at retry step 0 with its record extended to Retention
// from now (a test send's to TestRetention), then attempted at once. Any other delivery is returned
// unchanged; one whose event's body has expired too, with an error wrapping types.ErrPayloadExpired.
// It also reports whether this call reset the delivery. A bounded call (the Dispatcher's Redeliver;
// not Recover's, bounded by its limit) first takes a slot of the webhook's and its tenant's resend
// limiters (ratelimit.Resends): refused, it resets nothing and returns an error wrapping
// types.ErrActionsLimited.
func (r *Redeliverer) Redeliver(ctx context.Context, deliveryID string, bounded bool) (*types.Delivery, bool, error) {
	rec, err := r.Records.Record(ctx, deliveryID)
	if err != nil {
		return nil, false, err
	}
	resend := rec.Status == types.StatusSuccess && rec.OrderKey == "" && r.Now().Sub(rec.UpdatedAt) >= ResendQuiet
	if rec.Status != types.StatusFailed && !resend {
		return &rec.Delivery, false, nil
	}
	wh, err := r.Webhooks.Stored(ctx, rec.WebhookID)
	if err != nil {
		return &rec.Delivery, false, fmt.Errorf("webhooks: redeliver %s: %w", deliveryID, err)
	}
	if wh.Disabled {
		return &rec.Delivery, false, fmt.Errorf("%w: redeliver %s: webhook %s", types.ErrWebhookDisabled, deliveryID, wh.ID)
	}
	if bounded {
		if err := ratelimit.Resends.Take(ctx, r.Client, r.Keys, wh.ID, wh.Tenant); err != nil {
			return &rec.Delivery, false, err
		}
	}
	shard, _ := r.Keys.DeliveryShard(deliveryID)
	reset := r.reset(shard, wh.Tenant, rec)
	reply, err := rdb.RunRedeliver(ctx, r.Client, r.Keys, reset)
	if err != nil {
		return nil, false, fmt.Errorf("webhooks: redeliver %s: %w", deliveryID, err)
	}
	if rec = reply.Record; rec == nil {
		return nil, false, fmt.Errorf("%w: delivery %q", types.ErrNotFound, deliveryID)
	}
	if reply.Result == rdb.RedeliverExpired {
		return &rec.Delivery, false, fmt.Errorf("%w: redeliver %s: its %s (Options.PayloadRetention): there is nothing to send again; dispatch the event again instead",
			types.ErrPayloadExpired, deliveryID, types.PayloadExpired(types.PayloadExpiry(rec.CreatedAt, r.PayloadRetention)))
	}
	if reply.Result != rdb.RedeliverReset {
		return &rec.Delivery, reply.Result == rdb.RedeliverWaiting, r.behind(ctx, wh.Tenant, rec, reply.Result)
	}
	r.extendOrderMarker(ctx, wh.Tenant, rec)
	rec.HoldLease(reset.Token, reset.LeaseEnd)
	if r.Flights.Take(wh.ID, 1) == 0 {
		return &rec.Delivery, true, fmt.Errorf("webhooks: redeliver %s: webhook at its in-flight cap, a worker attempts it after its lease: %w",
			deliveryID, types.ErrDeferred)
	}
	defer r.Flights.Release(wh.ID)
	return &rec.Delivery, true, r.Attempt(ctx, shard, rec, wh, reply.Body)
}

// reset is the reset of rec, read in a shard, by this call: pending, at retry step 0, leased for the
// attempt now, kept Retention from now (and past its expiry as read, so that its old index entry is
// told apart from the new one).
func (r *Redeliverer) reset(shard int, tenant string, rec *rdb.Record) rdb.Reset {
	now := r.Now()
	leaseEnd := now.Add(r.Lease)
	renewed := *rec
	renewed.Status, renewed.Step, renewed.NextAttemptAt = types.StatusPending, 0, rdb.MilliTime(leaseEnd.UnixMilli())
	renewed.UpdatedAt = rdb.MilliTime(now.UnixMilli())
	retention := r.Retention
	if types.IsTestDelivery(&rec.Delivery) {
		retention = r.TestRetention
	}
	renewed.ExpiresAt = rdb.MilliTime(max(now.UnixMilli()+retention.Milliseconds(), rdb.UnixMilli(rec.ExpiresAt)+1))
	token := rdb.NewToken()
	renewed.HoldLease(token, leaseEnd)
	bodyTTL := retention
	if r.PayloadRetention > 0 {
		bodyTTL = 0 // left as it is: the payload goes PayloadRetention after its event was accepted
	}
	return rdb.Reset{Shard: shard, Tenant: tenant, Read: rec, Renewed: &renewed, Token: token, Now: now, LeaseEnd: leaseEnd,
		Retention: retention, BodyTTL: bodyTTL}
}

// behind is Redeliver's error for a delivery the redeliver script did not reset for an attempt now:
// nil when it did not reset it at all, else (an ordered delivery reset behind its key's head,
// rdb.RedeliverWaiting) one wrapping ErrDeferred, once the event's marker is extended as the reset
// extended its record.
func (r *Redeliverer) behind(ctx context.Context, tenant string, rec *rdb.Record, result int64) error {
	if result != rdb.RedeliverWaiting {
		return nil
	}
	r.extendOrderMarker(ctx, tenant, rec)
	return fmt.Errorf("webhooks: redeliver %s: queued behind earlier deliveries of order key %q: %w", rec.ID, rec.OrderKey, types.ErrDeferred)
}

// extendOrderMarker keeps an ordered event's marker at least as long as its records once one was
// redelivered (best effort: a marker that expires early only lets the id be dispatched again with
// another key).
func (r *Redeliverer) extendOrderMarker(ctx context.Context, tenant string, rec *rdb.Record) {
	if rec.OrderKey == "" {
		return
	}
	if err := rdb.ExtendOrderMarker(ctx, r.Client, r.Keys, rdb.ScopedEventID(tenant, rec.EventID), r.MarkerTTL); err != nil {
		r.Log.Warn("webhooks: extend order marker", "delivery_id", rec.ID, "error", err)
	}
}
