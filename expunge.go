package webhooks

import (
	"context"
	"fmt"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// ExpungeBatch is how many of a tenant's deliveries, and of its replay index's events, one
// ExpungeTenant call removes per shard at most.
const ExpungeBatch = rdb.ExpungeBatch

// ExpungeTenant erases a tenant from Redis on request (a GDPR erasure), one bounded step per call:
// call it again until it returns 0. Each call makes at most 11·Shards + 4·W + 14 Redis commands, MULTI
// and EXEC included (W: the tenant's webhooks; 718 + 4·W with the default 64 shards), in at most five
// round trips (internal/rdb.ExpungeStep says which), removes at
// most ExpungeBatch deliveries and ExpungeBatch replay entries per shard, and returns how many keys,
// hash fields, zset members and stream entries it removed.
//
// Its first call removes the tenant's subscriptions, so that the tenant's events are no longer
// claimed once every Dispatcher's subscriber cache (1 s) has moved on; then its delivery records, the
// payloads and order markers of its events, its delivery and replay indexes, queue, inline, order
// sequence and ready entries go, a batch per shard per call; the last calls remove its webhooks
// (JSON, circuits, hourly counters, the tenant's index), their rate limiters, concurrency slots and
// OAuth2 tokens, failed-delivery counts and action limiters (test sends, resends, retries, tries
// now), the tenant's and its webhooks' (the portal keeps no other state: its tokens are
// signed, not stored). Afterwards no key, field or value in Redis names the tenant, its webhook ids
// or its event ids, or holds its payloads (TestExpungeTenantLeavesNothing).
//
// It is safe while workers run: a delivery in flight whose record goes loses its lease (its outcome
// writes nothing), and no circuit or hourly counter is created for a webhook the registry no longer
// holds. Dispatch no more events of the tenant meanwhile: one dispatched after its last call is
// stored as any other (with Options.ReplayIndex, even without a webhook to take it). An attempt
// already past its rate or concurrency slot when its webhook goes may leave that slot's key, which
// names the webhook, until it expires (at most a lease); an ordered event's marker whose records
// expired before the call stays its last 5 minutes.
//
// tenant "" (the webhooks of no tenant) or an invalid name gives an error wrapping ErrInvalidWebhook.
func (d *Dispatcher) ExpungeTenant(ctx context.Context, tenant string) (int, error) {
	if tenant == "" {
		return 0, fmt.Errorf("%w: ExpungeTenant needs a tenant", ErrInvalidWebhook)
	}
	if err := validateTenant(tenant); err != nil {
		return 0, err
	}
	if err := loadKeys(ctx, d.keys, d.rdb); err != nil {
		return 0, err
	}
	n, err := rdb.ExpungeStep(ctx, d.rdb, d.keys, tenant, d.now())
	if n > 0 {
		d.webhooks.invalidate() // this process stops claiming the tenant's events at once
	}
	return n, err
}
