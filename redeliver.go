package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/worker"
)

// Redeliver sends a delivery again: a failed one (the one way a failed delivery is sent again), or one
// that succeeded, unordered ("you show 200, we never got it"), which gets one more attempt with the same
// webhook-id. It keeps the delivery's id, event and history (the new attempt is added to it), gives it
// the whole retry schedule again, extends its record (its claim) to Options.Retention from now, and
// makes the first attempt before it returns. A pending delivery, an ordered one that succeeded, and one
// that succeeded within the last 5 s (resendQuiet: a repeated click, or a concurrent call that lost the
// race to the one that just sent it) are returned unchanged; concurrent calls send a delivery again once. A delivery whose webhook was
// deleted gives an error wrapping ErrNotFound, one whose webhook is disabled an error wrapping
// ErrWebhookDisabled, and the delivery is left as it is.
func (d *Dispatcher) Redeliver(ctx context.Context, deliveryID string) (*Delivery, error) {
	dl, _, err := d.redeliver(ctx, deliveryID)
	return dl, err
}

// resendQuiet is how long after its last attempt a delivery that succeeded is not sent again.
const resendQuiet = 5 * time.Second

// redeliver is Redeliver that also reports whether this call reset the delivery.
func (d *Dispatcher) redeliver(ctx context.Context, deliveryID string) (*Delivery, bool, error) {
	rec, err := d.deliveries.get(ctx, deliveryID)
	if err != nil {
		return nil, false, err
	}
	resend := rec.Status == StatusSuccess && rec.OrderKey == "" && d.now().Sub(rec.UpdatedAt) >= resendQuiet
	if rec.Status != StatusFailed && !resend {
		return &rec.Delivery, false, nil
	}
	wh, _, err := d.webhooks.load(ctx, rec.WebhookID)
	if err != nil {
		return &rec.Delivery, false, fmt.Errorf("webhooks: redeliver %s: %w", deliveryID, err)
	}
	if wh.Disabled {
		return &rec.Delivery, false, fmt.Errorf("%w: redeliver %s: webhook %s", ErrWebhookDisabled, deliveryID, wh.ID)
	}
	shard, _ := d.keys.DeliveryShard(deliveryID)
	now := d.now()
	renewed := *rec
	renewed.Status, renewed.Step, renewed.NextAttemptAt = StatusPending, 0, rdb.MilliTime(now.Add(d.lease).UnixMilli())
	renewed.UpdatedAt = rdb.MilliTime(now.UnixMilli())
	renewed.ExpiresAt = rdb.MilliTime(max(now.UnixMilli()+d.opts.Retention.Milliseconds(), rdb.UnixMilli(rec.ExpiresAt)+1))
	token := rdb.NewToken()
	renewed.HoldLease(token, now.Add(d.lease))
	keys := []string{d.keys.Delivery(shard, deliveryID), d.keys.Ready(shard),
		d.keys.Event(shard, rdb.ScopedEventID(wh.Tenant, rec.EventID)), d.keys.Index(shard, rec.WebhookID), d.keys.Queue(shard, rec.WebhookID)}
	args := []any{now.UnixMilli(), d.opts.Retention.Milliseconds(), now.Add(d.lease).UnixMilli(), deliveryID, token,
		rec.Raw, renewed.Encode(), rdb.IndexedHash(deliveryID), rdb.UnixMilli(renewed.ExpiresAt), rec.WebhookID}
	script, keys, args := d.redeliverScriptFor(shard, wh, rec, &renewed, keys, args)
	reply, err := script.Run(ctx, d.rdb, keys, args...).Slice()
	if err != nil {
		return nil, false, fmt.Errorf("webhooks: redeliver %s: %w", deliveryID, err)
	}
	if len(reply) < 3 {
		return nil, false, fmt.Errorf("%w: delivery %q", ErrNotFound, deliveryID)
	}
	raw, _ := reply[2].(string)
	rec, err = rdb.ParseRecord(deliveryID, raw)
	if err != nil {
		return nil, false, err
	}
	if reset, _ := reply[0].(int64); reset != rdb.RedeliverReset {
		return &rec.Delivery, reset == rdb.RedeliverWaiting, d.redeliveredBehind(ctx, wh.Tenant, rec, reset)
	}
	d.extendOrderMarker(ctx, wh.Tenant, rec)
	rec.HoldLease(token, now.Add(d.lease))
	var body []byte
	if s, ok := reply[1].(string); ok {
		body = rdb.EventBody(s)
	}
	if d.flights.Take(wh.ID, 1) == 0 {
		return &rec.Delivery, true, fmt.Errorf("webhooks: redeliver %s: webhook at its in-flight cap, a worker attempts it after its lease: %w",
			deliveryID, ErrDeferred)
	}
	defer d.flights.Release(wh.ID)
	o := d.attempter.Attempt(ctx, worker.LeasedDelivery{Shard: shard, Rec: rec, Webhook: wh}, body)
	err = d.settle(ctx, shard, []*rdb.Record{rec}, []worker.Outcome{o})[0]
	return &rec.Delivery, true, err
}
