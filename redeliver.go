package webhooks

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/replay"
	"github.com/smartdrop/webhooks/internal/worker"
)

// Redeliver sends a delivery again: a failed one (the one way a failed delivery is sent again), or
// one that succeeded, unordered ("you show 200, we never got it"), which gets one more attempt with
// the same webhook-id. It keeps the delivery's id, event and history (the new attempt is added to
// it), gives it the whole retry schedule again, extends its record (its claim) to Options.Retention
// from now, and makes the first attempt before it returns. A pending delivery, an ordered one that
// succeeded, and one that succeeded within the last 5 s (replay.ResendQuiet: a repeated click, or a
// concurrent call that lost the race to the one that just sent it) are returned unchanged;
// concurrent calls send a delivery again once. A test send's record is extended to TestSendRetention
// (or Retention when shorter), not Retention. Resends are bounded: at most ActionsPerWebhook per second
// to a webhook and ActionsPerTenant per second to a tenant's webhooks, after a burst of ActionsBurst
// (more wraps ErrActionsLimited, saying when to try again; nothing is sent for it, nor a slot of either
// limit spent); Recover is bounded by its limit instead. A delivery whose webhook was deleted gives an error
// wrapping ErrNotFound, one whose webhook is disabled an error wrapping ErrWebhookDisabled, one whose
// payload has expired (Options.PayloadRetention) an error wrapping ErrPayloadExpired, and the delivery
// is left as it is. Under Options.PayloadRetention, Redeliver does not keep the payload longer: it
// still expires PayloadRetention after its event was accepted, and a retry due after that fails
// without an attempt.
func (d *Dispatcher) Redeliver(ctx context.Context, deliveryID string) (*Delivery, error) {
	dl, _, err := d.resend.Redeliver(ctx, deliveryID, true)
	return dl, err
}

// newRedeliverer is d's Redeliver (internal/replay): its attempt is the worker's, and so is recording
// its outcome.
func newRedeliverer(d *Dispatcher) *replay.Redeliverer {
	return &replay.Redeliverer{Client: d.rdb, Keys: d.keys, Records: adminDeliveries{d.deliveries}, Webhooks: webhookStore{d.webhooks},
		Flights: d.flights, Log: d.log, Now: func() time.Time { return d.now() }, Lease: d.lease, Retention: d.opts.Retention,
		TestRetention:    min(d.opts.Retention, TestSendRetention),
		PayloadRetention: d.opts.PayloadRetention,
		MarkerTTL:        d.opts.Retention + markerSlack,
		Attempt: func(ctx context.Context, shard int, rec *rdb.Record, wh *storedWebhook, body []byte) error {
			o := d.attempter.Attempt(ctx, worker.LeasedDelivery{Shard: shard, Rec: rec, Webhook: wh}, body)
			return d.settle(ctx, shard, []*rdb.Record{rec}, []worker.Outcome{o})[0]
		}}
}
