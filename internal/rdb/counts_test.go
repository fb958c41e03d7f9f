package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCountDue counts a webhook's due deliveries across shards, and its slots held only when asked,
// in one round trip; nothing asked costs none.
func TestCountDue(t *testing.T) {
	tr := newTestRedis(t)
	ctx := context.Background()
	k := KeysOf(tr.prefix, 2)
	now := time.UnixMilli(1_700_000_000_000)
	for s := range 2 {
		require.NoError(t, tr.rdb.ZAdd(ctx, k.Queue(s, "wh_a"),
			redis.Z{Score: float64(now.UnixMilli() - 1), Member: "due"},
			redis.Z{Score: float64(now.UnixMilli() + 1000), Member: "later"}).Err())
	}
	require.NoError(t, tr.rdb.ZAdd(ctx, k.Concurrency("wh_a"),
		redis.Z{Score: float64(now.UnixMilli() + 5000), Member: "held"},
		redis.Z{Score: float64(now.UnixMilli() - 5000), Member: "ended"}).Err())
	rt := &roundTrips{}
	tr.rdb.AddHook(rt)

	got, err := CountDue(ctx, tr.rdb, k, now, []DueRead{{WebhookID: "wh_a", Slots: true}, {WebhookID: "wh_a"}, {WebhookID: "wh_none"}})
	require.NoError(t, err)
	assert.Equal(t, []DueCount{{Due: 2, Slots: 1}, {Due: 2}, {}}, got)
	assert.EqualValues(t, 1, rt.n.Load(), "one round trip")

	got, err = CountDue(ctx, tr.rdb, k, now, nil)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.EqualValues(t, 1, rt.n.Load(), "nothing asked: no round trip")
}

// TestReadWebhookQueues counts a webhook's pending and parked deliveries over its shards and reads the
// newest entries of its indexes, in one round trip.
func TestReadWebhookQueues(t *testing.T) {
	tr := newTestRedis(t)
	ctx := context.Background()
	k := KeysOf(tr.prefix, 2)
	now := time.UnixMilli(1_700_000_000_000)
	for s := range 2 {
		require.NoError(t, tr.rdb.ZAdd(ctx, k.Queue(s, "wh_a"),
			redis.Z{Score: float64(now.UnixMilli()), Member: "soon"},
			redis.Z{Score: float64(now.UnixMilli() + 60_000), Member: "later"}).Err())
		for i := range 3 {
			require.NoError(t, tr.rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Index(s, "wh_a"), ID: "1-" + string(rune('1'+i)), Values: []any{"d", "x"}}).Err())
		}
	}
	rt := &roundTrips{}
	tr.rdb.AddHook(rt)

	qs, err := ReadWebhookQueues(ctx, tr.rdb, k, "wh_a", now.Add(time.Second), 2)
	require.NoError(t, err)
	assert.EqualValues(t, 4, qs.Pending)
	assert.EqualValues(t, 2, qs.Parked)
	require.Len(t, qs.Index, 2)
	for s := range 2 {
		require.Len(t, qs.Index[s], 2, "shard %d: the newest 2", s)
		assert.Equal(t, "1-3", qs.Index[s][0].ID, "shard %d: newest first", s)
	}
	assert.EqualValues(t, 1, rt.n.Load(), "one round trip")

	qs, err = ReadWebhookQueues(ctx, tr.rdb, k, "wh_a", time.Time{}, 2)
	require.NoError(t, err)
	assert.EqualValues(t, 4, qs.Pending)
	assert.Zero(t, qs.Parked, "no parked time: nothing parked")
}

// TestReadSeq reads an order key's sequence: its length and its head.
func TestReadSeq(t *testing.T) {
	tr := newTestRedis(t)
	ctx := context.Background()
	k := KeysOf(tr.prefix, 2)
	require.NoError(t, tr.rdb.RPush(ctx, k.Seq(1, "wh_a", "key"), "d1", "d2", "d3").Err())
	n, ids, err := ReadSeq(ctx, tr.rdb, k, 1, "wh_a", "key", 2)
	require.NoError(t, err)
	assert.EqualValues(t, 3, n)
	assert.Equal(t, []string{"d1", "d2"}, ids)
}
