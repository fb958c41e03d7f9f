package rdb

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v      string
		shards int
		ok     bool
	}{
		{"64", 64, true}, {"1", 1, true}, {"256", 256, true}, {FormatCount(64), 64, true},
		{"0", 0, false}, {"257", 0, false}, {"32 v1", 0, false}, {"64 b", 0, false},
		{"", 0, false}, {"x", 0, false}, {"-4", 0, false},
	} {
		shards, err := ParseCount(tc.v)
		if !tc.ok {
			assert.Error(t, err, tc.v)
			continue
		}
		require.NoError(t, err, tc.v)
		assert.Equal(t, tc.shards, shards, tc.v)
	}
}

// TestDeliveryIDNamesItsShard: a pair's delivery id carries the shard of its event, of bounded
// length whatever the ids, and an index entry's hash gives the id back.
func TestDeliveryIDNamesItsShard(t *testing.T) {
	t.Parallel()
	for _, l := range []Layout{NewLayout("p", 64), NewLayout("p", 256), NewLayout("p", 16)} {
		for i := range 500 {
			eventID := fmt.Sprintf("evt_%d_%s", i, strings.Repeat("x", i))
			id := l.DeliveryID("wh_1", eventID)
			require.Len(t, id, DeliveryIDLen)
			shard, ok := l.ShardOfDelivery(id)
			require.True(t, ok)
			assert.Equal(t, l.ShardOf(eventID), shard)
			assert.Equal(t, id, IndexedID(shard, IndexedHash(id)))
			assert.NotEqual(t, id, l.DeliveryID("wh_2", eventID), "the pair names its id")
		}
		if l.Shards < MaxShards {
			_, ok := l.ShardOfDelivery(IndexedID(l.Shards, strings.Repeat("a", 12)))
			assert.False(t, ok, "a shard out of range is not one of the layout's")
		}
		_, ok := l.ShardOfDelivery("dlv_zz" + strings.Repeat("0", 24))
		assert.False(t, ok)
	}
}

// TestSlotTagsStartTheirRanges: shard i's tag hashes to the first slot of the i-th of S equal ranges.
func TestSlotTagsStartTheirRanges(t *testing.T) {
	t.Parallel()
	for _, shards := range []int{16, 64, 256} {
		tags := SlotTags("webhooks", shards)
		require.Len(t, tags, shards)
		for i, tag := range tags {
			assert.Equal(t, RangeStart(i, shards), TagSlot(strings.Trim(tag, "{}")), "shard %d of %d", i, shards)
		}
	}
	assert.Equal(t, 12739, TagSlot("123456789"), "Redis Cluster's CRC16 test vector")
}

// TestInlineEntryGivesBackItsDeliveryAndWebhook: an inline entry names its delivery and its webhook.
func TestInlineEntryGivesBackItsDeliveryAndWebhook(t *testing.T) {
	t.Parallel()
	id := NewLayout("p", 64).DeliveryID("wh_1", "evt|1")
	gotID, gotWebhook, ok := SplitInlineEntry(InlineEntry(id, "wh_0123456789abcdef"))
	require.True(t, ok)
	assert.Equal(t, id, gotID)
	assert.Equal(t, "wh_0123456789abcdef", gotWebhook)
	_, _, ok = SplitInlineEntry(id)
	assert.False(t, ok, "no webhook id")
}
