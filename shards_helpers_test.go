package webhooks

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/eventtypes"
	"github.com/smartdrop/webhooks/internal/rdb"
)

// Helpers for tests on the default keyspace: every test prefix is new, so its Dispatcher has
// DefaultShards shards.

// shardCount is the shard count of a test's (new) keyspace.
const shardCount = DefaultShards

// newKeyspace is the keyspace of a new prefix with the default shard count (tests, and what needs
// only the registry's keys).
func newKeyspace(prefix string) rdb.Keys { return rdb.KeysOf(prefix, DefaultShards) }

var defaultKeys = newKeyspace("test")

// shardOf is the shard of an event id in a new keyspace.
func shardOf(eventID string) int { return defaultKeys.ShardOf(eventID) }

// shardOfDelivery reads the shard out of a delivery id of a new keyspace.
func shardOfDelivery(id string) (int, error) { return defaultKeys.DeliveryShard(id) }

// deliveryIDFor is the delivery id of a pair in a new keyspace.
func deliveryIDFor(webhookID, eventID string) string {
	return defaultKeys.DeliveryID(webhookID, eventID)
}

// useClient points a Dispatcher at another client of the same Redis (made after New, which needs
// Redis to answer, so that a test can break the client).
func useClient(d *Dispatcher, rdb redis.UniversalClient) {
	d.rdb = rdb
	d.scripts, d.counts = newBatchers(rdb)
	d.breaker = newBreaker(rdb, d)
	d.webhooks.circuits, d.webhooks.rdb, d.deliveries.rdb = d.breaker, rdb, rdb
	d.eventTypes.rdb, d.eventTypes.cache = rdb, eventtypes.New(rdb, d.keys, eventTypeCacheTTL, func() time.Time { return d.now() })
	d.dests, _ = newDestinations(newHTTPDestination(d, rdb, d.webhooks.ring, d.dests.http.Client()), d.opts.Destinations)
	d.webhooks.dests = d.dests
	wireUnits(d)
}

// queued finds a delivery in its webhook's queue in a shard: its member and score, ok false when it
// has none.
func queued(t *testing.T, tr *testRedis, d *Dispatcher, shard int, webhookID, deliveryID string) (member string, score float64, ok bool) {
	t.Helper()
	entries, err := tr.rdb.ZRangeWithScores(context.Background(), d.keys.Queue(shard, webhookID), 0, -1).Result()
	require.NoError(t, err)
	for _, z := range entries {
		m, _ := z.Member.(string)
		if m == deliveryID {
			return m, z.Score, true
		}
	}
	return "", 0, false
}
