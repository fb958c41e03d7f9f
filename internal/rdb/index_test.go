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
