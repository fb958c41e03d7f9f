package keyspace

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
		v              string
		shards         int
		legacy, bodies bool
		ok             bool
	}{
		{"64", 64, false, false, true}, {"1", 1, false, false, true}, {"256", 256, false, false, true},
		{LegacyCount, 16, true, false, true}, {NewCount(64), 64, false, true, true}, {"1 b", 1, false, true, true},
		{"0", 0, false, false, false}, {"257", 0, false, false, false}, {"32 v1", 0, false, false, false},
		{"", 0, false, false, false}, {"x", 0, false, false, false}, {"-4", 0, false, false, false},
		{"16 b v1", 0, false, false, false}, {"0 b", 0, false, false, false}, {"64 c", 0, false, false, false},
	} {
		shards, legacy, bodies, err := ParseCount(tc.v)
		if !tc.ok {
			assert.Error(t, err, tc.v)
			continue
		}
		require.NoError(t, err, tc.v)
		assert.Equal(t, tc.shards, shards, tc.v)
		assert.Equal(t, tc.legacy, legacy, tc.v)
		assert.Equal(t, tc.bodies, bodies, tc.v)
	}
}

// TestDeliveryIDNamesItsShard: a pair's delivery id carries the shard of its event, of bounded
// length whatever the ids, and an index entry's hash gives the id back.
func TestDeliveryIDNamesItsShard(t *testing.T) {
	t.Parallel()
	for _, l := range []Layout{NewLayout("p", 64, false), NewLayout("p", 256, false), NewLayout("p", LegacyShards, true)} {
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

// TestMemberNamesItsDeliveryAndEvent: a queue member that names its event gives back the delivery id
// and the scoped event id whatever the event id holds, and its delivery's record key is the id's; a
// plain id is a member that names no event.
func TestMemberNamesItsDeliveryAndEvent(t *testing.T) {
	t.Parallel()
	l := NewLayout("p", 64, false)
	for _, eventID := range []string{"e", "a|b", "tenant\x00evt|1", strings.Repeat("|", 300)} {
		id := l.DeliveryID("wh_1", eventID)
		m := Member(id, eventID)
		gotID, gotEvent := SplitMember(m)
		assert.Equal(t, id, gotID, eventID)
		assert.Equal(t, eventID, gotEvent, eventID)
		assert.Equal(t, DeliveryHash(id), DeliveryHash(m), "a member's record is its delivery's")
		gotID, gotEvent = SplitMember(id)
		assert.Equal(t, id, gotID)
		assert.Empty(t, gotEvent)
		for _, member := range []string{m, id} {
			gotMember, gotWebhook, ok := SplitInlineEntry(InlineEntry(member, "wh_0123456789abcdef"))
			require.True(t, ok)
			assert.Equal(t, member, gotMember, "an inline entry gives back its member")
			assert.Equal(t, "wh_0123456789abcdef", gotWebhook)
		}
	}
	_, _, ok := SplitInlineEntry(strings.Repeat("d", DeliveryIDLen))
	assert.False(t, ok, "no webhook id")
	short, _ := SplitMember("dlv_12|x")
	assert.Equal(t, "dlv_12|x", short, "not a member of ours: kept whole")
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
	assert.Equal(t, "{p:3}", LegacyTags("p")[3])
}
