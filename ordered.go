package webhooks

// Ordered delivery per key (Event.OrderKey).
//
// An ordered event is sharded by its (tenant, order key), not by its id (Keys.OrderShard), so every
// delivery of one (webhook, key) sequence, its queue and the webhook's ready entry share one hash
// slot, and single-slot scripts see the whole sequence. Per (webhook, key) a list holds the
// deliveries in claim order:
//
//	{P:k}:seq:<webhook_id>:<order_key>   list    delivery ids in claim order; only the head is scheduled
//	                                             (q, or inline), the others wait unleased and unqueued
//	{P:k}:oevt:<event_id>                string  an ordered event's request body
//	{P:k}:blocked                        zset    "<webhook_id>:<order_key>" -> its list's expiry (ms), for
//	                                             the lists with deliveries waiting behind the head (Stats)
//	{P:s}:evt:<event_id>                 string  in the id's own shard s: "\x00" + order key, the marker
//	                                             that reserves the event id for its key
//
// The claim script appends to the list and queues a delivery only when it is the head; a non-head
// is created pending, not leased and not queued. When the head's outcome is final, the outcome
// script (rdb.OrderedOutcome) pops it and queues the next, due at once, in the same step; settle
// then pokes the local worker. So the next attempt of a key never starts before the previous
// one's final outcome is recorded, and only one of a key's deliveries is ever leasable.
//
// The duplicate check: the delivery id of an ordered pair carries the key's shard (Keys.OrderedDeliveryID),
// so a re-dispatch with the same key finds the same records and is a duplicate. A re-dispatch
// with another key would find none, so the event id is first reserved for its key: one script
// before the claim (ordered events only; batched with concurrent calls' scripts like the claim)
// writes the marker in the id's shard. A marker holding another key, or the body of an unordered
// dispatch of the id, refuses the call (ErrOrderKeyConflict); the unordered claim script refuses an
// id whose body key holds a marker. A crash between marker and claim strands nothing: the marker
// only keeps the id for its key until Retention.
//
// Every live head is in its webhook's queue (due, leased by a worker, retrying, or, failed and
// holding its key under BlockKeyOnFailure, until the end of its record's life) or, leased for an
// inline attempt, in the shard's inline zset. A head in neither was dropped by the lease script (its
// record expired) or as undecodable: the next claim on its key, or a Redeliver on it, pops it and
// queues the one after, so a lost head never blocks its key for good.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// reserveOrder reserves an ordered event's id for its key (rdb.ReserveOrder): an error wraps
// ErrOrderKeyConflict when the id was dispatched with another key or none.
func (d *Dispatcher) reserveOrder(ctx context.Context, scoped, orderKey string) error {
	marker := d.keys.Event(d.keys.ShardOf(scoped), scoped)
	ttl := (d.opts.Retention + markerSlack).Milliseconds()
	reply, err := d.scripts.Run(ctx, rdb.ReserveOrder, []string{marker}, rdb.OrderMarker+orderKey, ttl).Result()
	if err != nil {
		rdb.ReloadOnTransport(d.rdb, err)
		return err
	}
	if held, ok := reply.(string); ok {
		return fmt.Errorf("%w: %s", ErrOrderKeyConflict, describeMarker(held))
	}
	return nil
}

// markerSlack keeps an ordered event's marker a little longer than its records, which are created
// after it.
const markerSlack = 5 * time.Minute

// describeMarker says what an event id's body key held when it refused an order key.
func describeMarker(v string) string {
	if key, ok := strings.CutPrefix(v, rdb.OrderMarker); ok {
		return fmt.Sprintf("it was dispatched with order key %q", key)
	}
	return "it was dispatched unordered"
}

// claimOrdered claims the pairs of an ordered event (reserveOrder, then rdb.OrderedClaim). A pair
// created behind its key's head has its record switched, in memory, to the waiting one.
func (d *Dispatcher) claimOrdered(ctx context.Context, shard int, scoped, orderKey, fingerprint string, body []byte, recs []*rdb.Record, plans []targetPlan) ([]any, error) {
	if err := d.reserveOrder(ctx, scoped, orderKey); err != nil {
		return nil, fmt.Errorf("webhooks: claim event %s: %w", scoped, err)
	}
	keys := make([]string, 4, 5+4*len(recs))
	keys[0], keys[1] = d.keys.OrderedEvent(shard, scoped), d.keys.Ready(shard)
	keys[2], keys[3] = d.keys.Inline(shard), d.keys.Blocked(shard)
	args := make([]any, 3, 5+9*len(recs))
	args[0], args[1], args[2] = rdb.UnixMilli(recs[0].CreatedAt), d.opts.Retention.Milliseconds(), rdb.StoredEvent(fingerprint, body)
	now := d.now()
	waiting, checks := make([]*rdb.Record, len(recs)), make([]any, len(recs))
	for i, r := range recs {
		waiting[i] = r.Waiting()
		index := d.keys.Index(shard, r.WebhookID)
		keys = append(keys, d.keys.Delivery(shard, r.ID), index, d.keys.Queue(shard, r.WebhookID),
			d.keys.Seq(shard, r.WebhookID, orderKey))
		args = append(args, r.ID, rdb.IndexedHash(r.ID), r.Encode(), plans[i].due.UnixMilli(), r.WebhookID,
			waiting[i].Encode(), rdb.BlockedMember(r.WebhookID, orderKey), flag(plans[i].inline))
		checks[i] = flag(d.indexTTLs.due(index, now))
	}
	tenantKey, tenantMode := d.tenantIndexArgs(shard, scoped, now)
	keys, args = append(keys, tenantKey), append(append(args, checks...), tenantMode, d.opts.Retention.Milliseconds(), d.leaser.WakeDelay(),
		d.opts.payloadTTL(d.opts.Retention).Milliseconds())
	reply, err := d.runClaim(ctx, rdb.OrderedClaim, scoped, len(recs), keys, args)
	if err != nil {
		return nil, err
	}
	d.tenantIndexChecked(tenantKey, tenantMode, reply, now)
	for i, r := range recs {
		if reply[1+i] == int64(rdb.ClaimWaiting) {
			*r = *waiting[i]
		}
		if checks[i] == 1 && createdBy(reply[1+i]) { // a duplicate's claim wrote, and checked, nothing
			d.indexTTLs.checked(keys[4+4*i+1], now)
		}
	}
	return reply, nil
}

// claimEvent claims the pairs of one event (claim, or claimOrdered when orderKey is set) and returns
// the claim's reply and the key of the event's stored body.
func (d *Dispatcher) claimEvent(ctx context.Context, shard int, scoped, orderKey, eventType string, body []byte, recs []*rdb.Record, plans []targetPlan) ([]any, string, error) {
	fingerprint := eventFingerprint(eventType, body)
	if orderKey == "" {
		reply, err := d.claim(ctx, shard, scoped, fingerprint, body, recs, plans)
		return reply, d.keys.Event(shard, scoped), err
	}
	d.orderRecords(shard, scoped, orderKey, recs)
	reply, err := d.claimOrdered(ctx, shard, scoped, orderKey, fingerprint, body, recs, plans)
	return reply, d.keys.OrderedEvent(shard, scoped), err
}

// queuedBehind gives a plan for an inline attempt whose pair the claim created behind its key's head
// (item, its reply, is rdb.ClaimWaiting) the reason its Result says why it was not attempted.
func (p *targetPlan) queuedBehind(item int64) {
	if item == rdb.ClaimWaiting && p.inline {
		p.reason = "queued behind earlier deliveries of its order key: the worker attempts it once they are final"
	}
}

// orderRecords makes the new records of an ordered event: their ids in the key's shard, their key
// set.
func (d *Dispatcher) orderRecords(shard int, scoped, orderKey string, recs []*rdb.Record) {
	for _, r := range recs {
		r.ID, r.OrderKey = d.keys.OrderedDeliveryID(shard, r.WebhookID, scoped), orderKey
	}
}

// findOrdered is Find for an ordered event: its marker names its key, whose shard holds the pair.
func (r *DeliveryRepo) findOrdered(ctx context.Context, tenant, webhookID, scoped string) (*Delivery, error) {
	v, err := rdb.ReadStoredEvent(ctx, r.rdb, r.keys, scoped)
	if err != nil {
		return nil, fmt.Errorf("webhooks: read event %s: %w", scoped, err)
	}
	key, ok := strings.CutPrefix(v, rdb.OrderMarker)
	if !ok || key == "" {
		return nil, fmt.Errorf("%w: delivery of event %q", ErrNotFound, scoped)
	}
	return r.Get(ctx, r.keys.OrderedDeliveryID(r.keys.OrderShard(tenant, key), webhookID, scoped))
}

// Position returns how many deliveries of the same webhook and order key are ahead of an ordered
// delivery (Delivery.OrderKey): 0 for its key's head, the one being attempted (or, with
// Options.BlockKeyOnFailure, failed and holding its key); -1 for a delivery that is in no sequence
// (unordered, or final and off its key's sequence). An unknown id gives an error wrapping
// ErrNotFound. It costs two round trips, the second linear in the key's backlog.
func (r *DeliveryRepo) Position(ctx context.Context, deliveryID string) (int, error) {
	rec, err := r.get(ctx, deliveryID)
	if err != nil || rec.OrderKey == "" {
		return -1, err
	}
	shard, _ := r.keys.DeliveryShard(deliveryID)
	pos, found, err := rdb.SeqPosition(ctx, r.rdb, r.keys, shard, rec.WebhookID, rec.OrderKey, deliveryID)
	switch {
	case err != nil:
		return -1, fmt.Errorf("webhooks: read the order of %s: %w", deliveryID, err)
	case !found:
		return -1, nil
	}
	return int(pos), nil
}
