package webhooks

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyWithoutTTLAllowed reports whether key may live without a TTL: the registry's (webhooks,
// subscriptions, circuits, the shard count: configuration, not deliveries) and the schedule's zsets,
// which empty as their deliveries settle (the schema comment, internal/rdb/schema.go).
func keyWithoutTTLAllowed(key string) bool {
	if strings.Contains(key, ":registry}:") && !strings.Contains(key, ":registry}:hourly:") {
		return true
	}
	for _, suffix := range []string{":ready", ":inline", ":blocked"} {
		if strings.HasSuffix(key, suffix) {
			return true
		}
	}
	return strings.Contains(key, "}:q:")
}

// TestEveryKeyExpiresWhenWrittenAgain: a keyspace whose delivery keys have all gone (expired, evicted,
// deleted) and are written again by the same Dispatcher has a TTL on every key that grows with the
// events: no per-process memory of having set a TTL lately may skip it on a key that was re-created.
// Index streams, the replay index, records, bodies, order sequences and hourly counters are checked.
func TestEveryKeyExpiresWhenWrittenAgain(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	ctx := context.Background()
	d := newTestDispatcher(t, tr, Options{ReplayIndex: true})
	rc := newReceiver(t)
	mustCreate(t, d, rc, "pool.*")
	round := func(r int) {
		for i := range 40 {
			evt := Event{Type: "pool.created", ID: fmt.Sprintf("r%d-e%d", r, i), Data: map[string]int{"i": i}}
			if i%4 == 0 {
				evt.OrderKey = fmt.Sprintf("pool-%d", i%8)
			}
			_, err := d.Dispatch(ctx, evt)
			require.NoError(t, err)
		}
		_, err := d.Dispatch(ctx, Event{Type: "nobody.listens", ID: fmt.Sprintf("r%d-replay", r)}) // replay index only
		require.NoError(t, err)
	}
	noTTL := func() []string {
		var out []string
		for _, k := range tr.keys(t) {
			if keyWithoutTTLAllowed(k) {
				continue
			}
			ttl, err := tr.rdb.PTTL(ctx, k).Result()
			require.NoError(t, err)
			if ttl < 0 && ttl != -2*time.Nanosecond { // -2: gone meanwhile
				out = append(out, k)
			}
		}
		return out
	}

	round(1)
	require.Empty(t, noTTL(), "keys without a TTL after the first writes")
	// Every key of the deliveries goes, as when it expires or is evicted; the registry stays.
	for _, k := range tr.keys(t) {
		if !strings.Contains(k, ":registry}:") || strings.Contains(k, ":registry}:hourly:") {
			require.NoError(t, tr.rdb.Del(ctx, k).Err())
		}
	}
	round(2)
	assert.Empty(t, noTTL(), "keys re-created without a TTL")
}

// TestIndexesOutliveTheirNewestEntryAfterADuplicate: a claim that only finds duplicates writes no
// index entry and checks no index TTL, so it does not count as the check this Dispatcher makes once
// per Retention/64: a webhook's and its tenant's index streams whose TTL has run down (here set to
// half the retention, as if half its life had passed) are extended by the next fresh claim, and keep
// their newest entry's record (Retention) in Redis.
func TestIndexesOutliveTheirNewestEntryAfterADuplicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{Shards: 1})
	rc := newReceiver(t)
	w, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "acme"})
	require.NoError(t, err)
	indexes := []string{d.keys.Index(0, w.ID), d.keys.TenantIndex(0, "acme")}
	_, err = d.Enqueue(ctx, Event{ID: "e1", Type: "a.b", Tenant: "acme"})
	require.NoError(t, err)
	clock.Advance(d.opts.Retention/64 + time.Minute) // each index's TTL is due a check again
	for _, k := range indexes {
		require.NoError(t, tr.rdb.PExpire(ctx, k, d.opts.Retention/2).Err())
	}
	res, err := d.Enqueue(ctx, Event{ID: "e1", Type: "a.b", Tenant: "acme"})
	require.NoError(t, err)
	require.True(t, res[0].Duplicate)
	_, err = d.Enqueue(ctx, Event{ID: "e2", Type: "a.b", Tenant: "acme"}) // fresh: its entries go in
	require.NoError(t, err)
	for _, k := range indexes {
		ttl, err := tr.rdb.PTTL(ctx, k).Result()
		require.NoError(t, err)
		assert.GreaterOrEqual(t, ttl, d.opts.Retention, "%s outlives its newest entry's record", k)
	}
}
