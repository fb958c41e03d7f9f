package rdb

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reset is a delivery's record reset for a new series of attempts by the redeliver scripts (Redeliver,
// OrderedRedeliver for an ordered delivery).
type Reset struct {
	Shard    int
	Tenant   string  // the webhook's: the event is stored under its id scoped by it
	Read     *Record // the record as the caller read it: the script resets only that one
	Renewed  *Record // the reset record: pending, at retry step 0, leased under Token until LeaseEnd
	Token    string
	Now      time.Time
	LeaseEnd time.Time
	// Retention is how long the record and its index entry are kept from Now.
	Retention time.Duration
	// BodyTTL is how long the event's body is kept at least from Now: Retention, or 0 to leave its
	// expiry as it is (Options.PayloadRetention).
	BodyTTL time.Duration
}

// ResetReply is the redeliver script's reply.
type ResetReply struct {
	// Result is RedeliverReset, RedeliverUnchanged, RedeliverExpired (the event's body is gone: nothing
	// written), or RedeliverWaiting (ordered, behind its key's head).
	Result int64
	Body   []byte  // the event's body (EventBody) when reset, nil when it has expired or was not read
	Record *Record // the record as it stands; nil when it is gone
}

// RunRedeliver runs the redeliver script of r (ordered_redeliver.lua for a record with an order key,
// else redeliver.lua).
func RunRedeliver(ctx context.Context, c redis.UniversalClient, k Keys, r Reset) (ResetReply, error) {
	id, s := r.Read.ID, r.Shard
	scoped := ScopedEventID(r.Tenant, r.Read.EventID)
	keys := []string{k.Delivery(s, id), k.Ready(s), k.Event(s, scoped), k.Index(s, r.Read.WebhookID), k.Queue(s, r.Read.WebhookID)}
	args := []any{r.Now.UnixMilli(), r.Retention.Milliseconds(), r.LeaseEnd.UnixMilli(), id, r.Token,
		r.Read.Raw, r.Renewed.Encode(), IndexedHash(id), UnixMilli(r.Renewed.ExpiresAt), r.Read.WebhookID, r.BodyTTL.Milliseconds()}
	script := Redeliver
	if key := r.Read.OrderKey; key != "" {
		script = OrderedRedeliver
		keys[2] = k.OrderedEvent(s, scoped)
		keys = append(keys, k.Seq(s, r.Read.WebhookID, key), k.Blocked(s), k.Inline(s))
		args = append(args, r.Renewed.Waiting().Encode(), BlockedMember(r.Read.WebhookID, key))
	}
	if r.Tenant != "" {
		keys = append(keys, k.TenantIndex(s, r.Tenant))
	}
	reply, err := script.Run(ctx, c, keys, args...).Slice()
	if err != nil || len(reply) < 3 {
		return ResetReply{}, err
	}
	raw, _ := reply[2].(string)
	rec, err := ParseRecord(id, raw)
	if err != nil {
		return ResetReply{}, err
	}
	out := ResetReply{Record: rec}
	out.Result, _ = reply[0].(int64)
	if body, ok := reply[1].(string); ok {
		out.Body = EventBody(body)
	}
	return out, nil
}

// ExtendOrderMarker makes an ordered event's marker (its id scoped by its tenant) last at least ttl
// from now (PEXPIRE GT).
func ExtendOrderMarker(ctx context.Context, c redis.UniversalClient, k Keys, scoped string, ttl time.Duration) error {
	return c.Do(ctx, "PEXPIRE", k.Event(k.ShardOf(scoped), scoped), ttl.Milliseconds(), "GT").Err()
}
