package webhooks

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	ks "github.com/smartdrop/webhooks/internal/keyspace"
)

// redeliverScript resets a failed delivery for a new series of attempts, if its record is still the
// one the caller read: the new record (computed in Go) is pending, at retry step 0, leased for the
// attempt Redeliver makes at once, and the record, its index entry and the event body are all extended
// to now + retention. A record that changed since it was read is left as it is (concurrent calls reset
// it once), unless it is leased under this call's own token: the same call run again by a client
// whose reply was lost, reported as reset again.
//
// KEYS[1] -> {P:s}:rec:<h>
// KEYS[2] -> {P:s}:ready
// KEYS[3] -> {P:s}:evt:<event_id>
// KEYS[4] -> {P:s}:list:<webhook_id>
// KEYS[5] -> {P:s}:q:<webhook_id>
// ARGV[1] -> now (ms)
// ARGV[2] -> retention (ms)
// ARGV[3] -> lease end (ms)
// ARGV[4] -> the delivery id, its queue member
// ARGV[5] -> lease token
// ARGV[6] -> the failed record as the caller read it
// ARGV[7] -> the reset record
// ARGV[8] -> the delivery's hash (the id's last 12 bytes, raw)
// ARGV[9] -> the reset record's expiry (ms): later than the failed record's, so its old index entry
// is told apart from the new one
// ARGV[10] -> webhook id
// returns {} when the record is gone; otherwise {redeliverReset or redeliverUnchanged, event body or
// false, record}
var redeliverScript = redis.NewScript(indexFunction + luaLeaseOf + `
local rec = redis.call('GET', KEYS[1])
if not rec then return {} end
if leaseOf(KEYS[1], ARGV[5]) == ` + luaHeld + ` then
  -- This very call reset it already: its reply was lost and the client sent it again.
  return {` + strconv.Itoa(redeliverReset) + `, redis.call('GET', KEYS[3]), rec}
end
if rec ~= ARGV[6] then return {` + strconv.Itoa(redeliverUnchanged) + `, false, rec} end
local retention = tonumber(ARGV[2])
index(KEYS[4], tonumber(ARGV[1]), retention, ARGV[8], ARGV[9], true)
redis.call('SET', KEYS[1], ARGV[7], 'PX', retention)
extend(KEYS[3], retention, 0)
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[4])
redis.call('ZADD', KEYS[2], 'LT', ARGV[3], ARGV[10])
return {` + strconv.Itoa(redeliverReset) + `, redis.call('GET', KEYS[3]), ARGV[7]}
`)

// redeliverScript's first reply.
const (
	redeliverUnchanged = 0
	redeliverReset     = 1
)

// Redeliver re-sends a failed delivery: the one way a failed delivery is sent again. It keeps the
// delivery's id, event and history, gives it the whole retry schedule again, extends its record (its
// claim) to Options.Retention from now, and makes the first attempt before it returns. A pending or
// successful delivery is returned unchanged; concurrent calls reset a delivery once. A delivery whose
// webhook was deleted gives an error wrapping ErrNotFound, one whose webhook is disabled an error
// wrapping ErrWebhookDisabled, and the delivery is left as it is.
func (d *Dispatcher) Redeliver(ctx context.Context, deliveryID string) (*Delivery, error) {
	dl, _, err := d.redeliver(ctx, deliveryID)
	return dl, err
}

// redeliver is Redeliver that also reports whether this call reset the delivery.
func (d *Dispatcher) redeliver(ctx context.Context, deliveryID string) (*Delivery, bool, error) {
	rec, err := d.deliveries.get(ctx, deliveryID)
	if err != nil {
		return nil, false, err
	}
	if rec.Status != StatusFailed {
		return &rec.Delivery, false, nil
	}
	wh, _, err := d.webhooks.load(ctx, rec.WebhookID)
	if err != nil {
		return &rec.Delivery, false, fmt.Errorf("webhooks: redeliver %s: %w", deliveryID, err)
	}
	if wh.Disabled {
		return &rec.Delivery, false, fmt.Errorf("%w: redeliver %s: webhook %s", ErrWebhookDisabled, deliveryID, wh.ID)
	}
	shard, _ := d.keys.shardOfDelivery(deliveryID)
	now := d.now()
	renewed := *rec
	renewed.Status, renewed.step, renewed.NextAttemptAt = StatusPending, 0, msTime(now.Add(d.lease).UnixMilli())
	renewed.UpdatedAt = msTime(now.UnixMilli())
	renewed.ExpiresAt = msTime(max(now.UnixMilli()+d.opts.Retention.Milliseconds(), unixMilli(rec.ExpiresAt)+1))
	token := randomHex(tokenLen / 2)
	renewed.holdLease(token, now.Add(d.lease))
	keys := []string{d.keys.deliveryKey(shard, deliveryID), d.keys.readyKey(shard),
		d.keys.eventKey(shard, scopedEventID(wh.Tenant, rec.EventID)), d.keys.indexKey(shard, rec.WebhookID), d.keys.queueKey(shard, rec.WebhookID)}
	args := []any{now.UnixMilli(), d.opts.Retention.Milliseconds(), now.Add(d.lease).UnixMilli(), deliveryID, token,
		rec.raw, renewed.encode(), ks.IndexedHash(deliveryID), unixMilli(renewed.ExpiresAt), rec.WebhookID}
	script, keys, args := d.redeliverScriptFor(shard, wh, rec, &renewed, keys, args)
	reply, err := script.Run(ctx, d.rdb, keys, args...).Slice()
	if err != nil {
		return nil, false, fmt.Errorf("webhooks: redeliver %s: %w", deliveryID, err)
	}
	if len(reply) < 3 {
		return nil, false, fmt.Errorf("%w: delivery %q", ErrNotFound, deliveryID)
	}
	raw, _ := reply[2].(string)
	rec, err = parseRecord(deliveryID, raw)
	if err != nil {
		return nil, false, err
	}
	if reset, _ := reply[0].(int64); reset != redeliverReset {
		return &rec.Delivery, reset == redeliverWaiting, d.redeliveredBehind(ctx, wh.Tenant, rec, reset)
	}
	d.extendOrderMarker(ctx, wh.Tenant, rec)
	rec.holdLease(token, now.Add(d.lease))
	var body []byte
	if s, ok := reply[1].(string); ok {
		body = eventBody(s)
	}
	if d.flights.take(wh.ID, 1) == 0 {
		return &rec.Delivery, true, fmt.Errorf("webhooks: redeliver %s: webhook at its in-flight cap, a worker attempts it after its lease: %w",
			deliveryID, ErrDeferred)
	}
	defer d.flights.release(wh.ID)
	o := d.attemptLeased(ctx, leasedDelivery{shard: shard, rec: rec}, wh, body)
	err = d.settle(ctx, shard, []*record{rec}, []outcome{o})[0]
	return &rec.Delivery, true, err
}
