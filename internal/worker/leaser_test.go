package worker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// newTestLeaser is a Leaser of a keyspace of 64 shards on a miniredis of its own, its clock stopped at
// now.
func newTestLeaser(t *testing.T, now time.Time) (*Leaser, redis.UniversalClient, rdb.Keys) {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = client.Close() })
	keys := rdb.NewKeys("wht_leaser", 64, 64)
	l := NewLeaser(LeaserConfig{Redis: client, Keys: keys, Local: NewLocalDue(1024), Flights: NewInFlight(0, time.Second, time.Now),
		LoadKeys: func(ctx context.Context) error { return keys.Load(ctx, client) }, Lease: 2 * time.Second,
		Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)})
	return l, client, keys
}

// TestPassFilledByTheLocalHintReadsMarkedShards: a pass the local hint fills (ScanSweep) still reads
// the shards this Dispatcher marked (an ordered key's next delivery, a requeued inline attempt, probe
// now), so what it wrote there is not left to the sweep.
func TestPassFilledByTheLocalHintReadsMarkedShards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_000)
	l, client, keys := newTestLeaser(t, now)
	require.NoError(t, l.cfg.LoadKeys(ctx))
	_, _, _, _, err := l.scan(ctx, now, 16, ScanFull) // every shard read once
	require.NoError(t, err)

	s, webhook := 3, "wh_1"
	require.NoError(t, client.ZAdd(ctx, keys.Ready(s), redis.Z{Score: float64(now.UnixMilli()), Member: webhook}).Err())
	due, _, _, _, err := l.scan(ctx, now, 16, ScanSweep)
	require.NoError(t, err)
	assert.Empty(t, due, "a shard not marked is left to its wake and the sweep")
	l.MarkShard(s)
	due, _, _, _, err = l.scan(ctx, now, 16, ScanSweep)
	require.NoError(t, err)
	assert.Equal(t, []Due{{Shard: s, ID: webhook}}, due, "the marked shard is read")
}
