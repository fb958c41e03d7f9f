package webhooks

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// evenMasters is how redis-cli --cluster create splits the slots over m masters (up to a slot):
// master j holds [j·16384/m, (j+1)·16384/m).
func evenMasters(slot, m int) int { return slot * m / rdb.ClusterSlots }

// TestShardTagsSpreadEvenly: with 16, 64 and 256 shards on 3, 6, 12, 16 and 32 evenly split masters, the
// shards per master differ by at most 20% (max/min ≤ 1.2) wherever there are at least 4 shards per
// master — for several prefixes, since tags depend on the prefix.
func TestShardTagsSpreadEvenly(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"webhooks", "wh", "a", "tenant-7"} {
		for _, shards := range []int{16, 64, 256} {
			start := time.Now()
			k := rdb.KeysOf(prefix, shards)
			t.Logf("prefix %q: %d tags chosen in %s", prefix, shards, time.Since(start).Round(time.Microsecond))
			require.Len(t, k.Tags, shards)
			seen := map[string]bool{}
			for i, tag := range k.Tags {
				require.NotEmpty(t, tag)
				assert.False(t, seen[tag], "tags are distinct")
				seen[tag] = true
				assert.Equal(t, rdb.RangeStart(i, shards), keySlot(tag+":ready"), "%s shard %d of %d", prefix, i, shards)
				assert.LessOrEqual(t, len(tag), len(prefix)+12, "tags stay short")
			}
			for _, masters := range []int{3, 6, 12, 16, 32} {
				per := make([]int, masters)
				for _, tag := range k.Tags {
					per[evenMasters(keySlot(tag), masters)]++
				}
				lo, hi := per[0], per[0]
				for _, n := range per {
					lo, hi = min(lo, n), max(hi, n)
				}
				t.Logf("prefix %q, %d shards on %d masters: per master %v", prefix, shards, masters, per)
				if shards >= 4*masters {
					assert.LessOrEqual(t, float64(hi)/float64(lo), 1.2, "prefix %q, %d shards on %d masters: %v", prefix, shards, masters, per)
				}
			}
		}
	}
}

// TestShardTagsOfV1: the 16 tags of v1, {P:0}…{P:15}, bunch (7, 3 and 6 shards on 3 masters for the
// default prefix): the reason tags are now chosen by slot.
func TestShardTagsOfV1(t *testing.T) {
	t.Parallel()
	per := make([]int, 3)
	for s := range 16 {
		tag := "{webhooks:" + strconv.Itoa(s) + "}"
		per[evenMasters(keySlot(tag), 3)]++
	}
	t.Logf("v1 tags of prefix webhooks on 3 masters: %v", per)
	assert.Equal(t, []int{7, 3, 6}, per)
}

func TestShardCountIsStoredAndFixed(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	ctx := context.Background()
	d := newTestDispatcher(t, tr, Options{})
	assert.Equal(t, DefaultShards, d.keys.Shards)
	v, err := tr.rdb.Get(ctx, d.keys.ShardCount()).Result()
	require.NoError(t, err)
	assert.Equal(t, rdb.FormatCount(DefaultShards), v)

	// The same count, or none, is fine; another is refused.
	d2 := newTestDispatcher(t, tr, Options{Shards: DefaultShards})
	assert.Equal(t, d.keys.Tags, d2.keys.Tags)
	d32, err := New(tr.rdb, Options{KeyPrefix: tr.prefix, Shards: 32})
	require.NoError(t, err, "New reads nothing: the first call that needs the count refuses it")
	_, err = d32.Dispatch(ctx, Event{Type: "a", ID: "e1"})
	require.ErrorIs(t, err, ErrInvalidOptions)
	require.ErrorIs(t, err, ErrNotAccepted)
	_, err = New(tr.rdb, Options{KeyPrefix: tr.prefix, Shards: MaxShards + 1})
	require.ErrorIs(t, err, ErrInvalidOptions)

	// A new prefix takes the count it is given.
	d3, err := New(tr.rdb, Options{KeyPrefix: tr.prefix + "x", Shards: 256})
	require.NoError(t, err)
	require.NoError(t, loadKeys(ctx, d3.keys, tr.rdb))
	t.Cleanup(func() { tr.rdb.Del(ctx, d3.keys.ShardCount()) })
	assert.Equal(t, 256, d3.keys.Shards)
	rc := newReceiver(t)
	_, err = d3.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"a"}})
	require.Error(t, err, "the egress guard is on in d3") // the layout is what this checks
}

// TestDeliveryIDOfAnotherShardCountIsNotFound: a delivery id whose shard is past the keyspace's count
// is not one of its deliveries.
func TestDeliveryIDOfAnotherShardCountIsNotFound(t *testing.T) {
	t.Parallel()
	k := rdb.KeysOf("x", 16)
	_, err := k.DeliveryShard(rdb.IndexedID(20, strings.Repeat("a", 12)))
	require.ErrorIs(t, err, ErrNotFound)
	_, err = k.DeliveryShard(rdb.IndexedID(15, strings.Repeat("a", 12)))
	require.NoError(t, err)
}

// cmdCounter counts the commands a client sends (each command of a pipeline).
type cmdCounter struct {
	passHook
	n atomic.Int64
}

func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}

func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}
