package webhooks

// The replay index (Options.ReplayIndex): per tenant and event shard, a zset of the events the shard
// stored, by when they were accepted, so that ReplayMissing can find a tenant's events of a time
// window without scanning. The claim script writes an event's entry in the step that first stores its
// body (one ZADD), and prunes the entries older than a retention (ZREMRANGEBYSCORE) once per 1/64 of
// a retention per key and Dispatcher, when it also sets the key's TTL to a retention and 1/64 more
// (indexTTLs): so the index holds about a retention of events, and a key no longer written expires.
// The entry is the event's id without its tenant (the key names the tenant), its score the accepted
// time (ms).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// splitScoped is the tenant and the event id of an event id scoped by its tenant (scopedEventID): a
// tenant never holds the NUL byte that joins them.
func splitScoped(scoped string) (tenant, eventID string) {
	if t, id, ok := strings.Cut(scoped, "\x00"); ok {
		return t, id
	}
	return "", scoped
}

// replayIndexArgs are the claim script's replay arguments for an event (its id scoped) of a shard:
// the tenant's replay key, the mode and the entry.
func (d *Dispatcher) replayIndexArgs(shard int, scoped string, now time.Time) (key, mode, entry string) {
	tenant, id := splitScoped(scoped)
	key = d.keys.Replay(shard, tenant)
	switch {
	case !d.opts.ReplayIndex:
		return key, rdb.ReplayOff, id
	case d.indexTTLs.due(key, now):
		return key, rdb.ReplayPrune, id
	}
	return key, rdb.ReplayAdd, id
}

// storeForReplay stores an event no webhook takes now, for a webhook a later ReplayMissing may send it
// to: the claim script with no target stores its body and indexes it (Options.ReplayIndex). Its
// error follows Dispatch's: ErrInvalidEvent with ErrEventConflict, else ErrNotAccepted.
func (d *Dispatcher) storeForReplay(ctx context.Context, evt Event, body []byte) error {
	scoped := rdb.ScopedEventID(evt.Tenant, evt.ID)
	_, err := d.claim(ctx, d.keys.ShardOf(scoped), scoped, eventFingerprint(evt.Type, body), body, nil, nil)
	if err != nil && !errors.Is(err, ErrInvalidEvent) {
		err = fmt.Errorf("%w: event %s: %w", ErrNotAccepted, evt.ID, err)
	}
	return err
}
