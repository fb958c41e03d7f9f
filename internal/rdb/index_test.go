package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadIndexedRecords keeps, in one round trip, only the records an index entry still names: not
// expired, present, of the webhook asked for, with the expiry the entry was indexed with.
func TestReadIndexedRecords(t *testing.T) {
	tr := newTestRedis(t)
	ctx := context.Background()
	k := KeysOf(tr.prefix, 2)
	now := time.UnixMilli(1_700_000_000_000)
	expiry := now.Add(time.Hour)
	put := func(id, webhookID string) {
		r := sampleRecordWith(LeaseNone)
		r.ID, r.WebhookID, r.ExpiresAt = id, webhookID, expiry
		require.NoError(t, tr.rdb.Set(ctx, k.Delivery(1, id), r.Encode(), 0).Err())
	}
	put("dlv_ok", "wh_1")
	put("dlv_other", "wh_2")
	put("dlv_reindexed", "wh_1")
	put("dlv_expired", "wh_1")
	rt := &roundTrips{}
	tr.rdb.AddHook(rt)

	x := expiry.UnixMilli()
	got, err := ReadIndexedRecords(ctx, tr.rdb, k, "wh_1", []IndexedRecord{
		{Shard: 1, ID: "dlv_ok", Expiry: x},
		{Shard: 1, ID: "dlv_other", Expiry: x},
		{Shard: 1, ID: "dlv_reindexed", Expiry: x - 1},
		{Shard: 1, ID: "dlv_expired", Expiry: now.UnixMilli()},
		{Shard: 1, ID: "dlv_gone", Expiry: x},
	}, now)
	require.NoError(t, err)
	require.Len(t, got, 5)
	require.NotNil(t, got[0])
	assert.Equal(t, "dlv_ok", got[0].ID)
	assert.Nil(t, got[1], "another webhook's")
	assert.Nil(t, got[2], "indexed again since")
	assert.Nil(t, got[3], "expired by now")
	assert.Nil(t, got[4], "gone")
	assert.EqualValues(t, 1, rt.n.Load(), "one round trip")

	recs, err := ReadRecords(ctx, tr.rdb, k, 1, []string{"dlv_other", "dlv_gone"})
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.NotNil(t, recs[0])
	assert.Equal(t, "wh_2", recs[0].WebhookID)
	assert.Nil(t, recs[1], "gone")
}

// TestReadShardRecords reads the records of several shards in one round trip, one MGET per shard: a
// record gone or not one maps to nil.
func TestReadShardRecords(t *testing.T) {
	tr := newTestRedis(t)
	ctx := context.Background()
	k := KeysOf(tr.prefix, 2)
	for s, id := range []string{"dlv_a", "dlv_b"} {
		r := sampleRecordWith(LeaseNone)
		r.ID, r.WebhookID = id, "wh_1"
		require.NoError(t, tr.rdb.Set(ctx, k.Delivery(s, id), r.Encode(), 0).Err())
	}
	require.NoError(t, tr.rdb.Set(ctx, k.Delivery(1, "dlv_junk"), "not a record", 0).Err())
	rt := &roundTrips{}
	tr.rdb.AddHook(rt)

	got, err := ReadShardRecords(ctx, tr.rdb, k, map[int][]string{0: {"dlv_a", "dlv_gone"}, 1: {"dlv_junk", "dlv_b"}})
	require.NoError(t, err)
	require.Len(t, got[0], 2)
	require.Len(t, got[1], 2)
	require.NotNil(t, got[0][0])
	assert.Equal(t, "dlv_a", got[0][0].ID)
	assert.Nil(t, got[0][1], "gone")
	assert.Nil(t, got[1][0], "not a record")
	require.NotNil(t, got[1][1])
	assert.Equal(t, "dlv_b", got[1][1].ID)
	assert.EqualValues(t, 1, rt.n.Load(), "one round trip")
}
