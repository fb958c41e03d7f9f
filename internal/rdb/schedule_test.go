package rdb

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParkAndUnpark: a park moves a webhook's ready score later only, an unpark earlier only, and
// neither adds a webhook that has no ready entry.
func TestParkAndUnpark(t *testing.T) {
	tr := newTestRedis(t)
	ctx := context.Background()
	k := KeysOf(tr.prefix, 2)
	now := time.UnixMilli(1_700_000_000_000)
	for s := range 2 {
		require.NoError(t, tr.rdb.ZAdd(ctx, k.Ready(s), redis.Z{Score: float64(now.UnixMilli()), Member: "wh_a"}).Err())
	}
	score := func(s int, webhook string) float64 {
		v, err := tr.rdb.ZScore(ctx, k.Ready(s), webhook).Result()
		if err == redis.Nil {
			return -1
		}
		require.NoError(t, err)
		return v
	}
	require.NoError(t, Park(ctx, tr.rdb, k, "wh_a", []int{0, 1}, now.Add(time.Minute)))
	require.NoError(t, Park(ctx, tr.rdb, k, "wh_a", []int{0}, now.Add(time.Second)))
	assert.Equal(t, float64(now.Add(time.Minute).UnixMilli()), score(0, "wh_a"), "a park never moves a score earlier")
	require.NoError(t, Unpark(ctx, tr.rdb, k, "wh_a", []int{1}, now))
	assert.Equal(t, float64(now.UnixMilli()), score(1, "wh_a"), "unparked")
	require.NoError(t, Unpark(ctx, tr.rdb, k, "wh_a", []int{1}, now.Add(time.Hour)))
	assert.Equal(t, float64(now.UnixMilli()), score(1, "wh_a"), "an unpark never moves a score later")
	require.NoError(t, Unpark(ctx, tr.rdb, k, "wh_b", []int{0}, now))
	assert.Equal(t, float64(-1), score(0, "wh_b"), "no ready entry is added")
}

// TestAdoptRunTakesEndedInlineEntries: the Adopt script's run takes the inline entries scored by its
// time into their queues, and leaves the others.
func TestAdoptRunTakesEndedInlineEntries(t *testing.T) {
	tr := newTestRedis(t)
	ctx := context.Background()
	k := KeysOf(tr.prefix, 1)
	require.NoError(t, tr.rdb.ZAdd(ctx, k.Inline(0),
		redis.Z{Score: 1000, Member: InlineEntry("dlv_1", "wh_a")},
		redis.Z{Score: 5000, Member: InlineEntry("dlv_2", "wh_a")}).Err())
	entries := []EndedInline{{ID: "dlv_1", WebhookID: "wh_a"}, {ID: "dlv_2", WebhookID: "wh_a"}}
	run := AdoptRun(k, 0, 2000, entries)
	n, err := run.Script.Run(ctx, tr.rdb, run.Keys, run.Args...).Int()
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the entry whose lease ended")
	assert.Equal(t, []string{"dlv_1"}, tr.rdb.ZRange(ctx, k.Queue(0, "wh_a"), 0, -1).Val())
	run = AdoptRun(k, 0, math.MaxInt64, entries)
	n, err = run.Script.Run(ctx, tr.rdb, run.Keys, run.Args...).Int()
	require.NoError(t, err)
	assert.Equal(t, 1, n, "every entry left, whatever its lease")
	assert.Equal(t, []string{"dlv_1", "dlv_2"}, tr.rdb.ZRange(ctx, k.Queue(0, "wh_a"), 0, -1).Val())
	assert.Zero(t, tr.rdb.ZCard(ctx, k.Inline(0)).Val())
}

// TestConcurrencySlots: a webhook's MaxConcurrency slots are taken up to its limit, and a slot given
// back can be taken again.
func TestConcurrencySlots(t *testing.T) {
	tr := newTestRedis(t)
	ctx := context.Background()
	k := KeysOf(tr.prefix, 1)
	for i, want := range []bool{true, true, false} {
		ok, err := TakeConcurrencySlot(ctx, tr.rdb, k, "wh_a", 2, time.Minute, "t"+string(rune('0'+i)))
		require.NoError(t, err)
		assert.Equal(t, want, ok, "slot %d of 2", i+1)
	}
	require.NoError(t, ReleaseConcurrencySlot(ctx, tr.rdb, k, "wh_a", "t0"))
	ok, err := TakeConcurrencySlot(ctx, tr.rdb, k, "wh_a", 2, time.Minute, "t3")
	require.NoError(t, err)
	assert.True(t, ok, "the slot given back")
}

// TestReadEventBodies reads stored events' bodies, with or without a fingerprint, each key once; an
// expired event is missing.
func TestReadEventBodies(t *testing.T) {
	tr := newTestRedis(t)
	ctx := context.Background()
	k := KeysOf(tr.prefix, 1)
	fingerprint := string(make([]byte, FingerprintLen))
	require.NoError(t, tr.rdb.Set(ctx, k.Event(0, "e1"), EventMark+fingerprint+`{"id":"e1"}`, time.Minute).Err())
	require.NoError(t, tr.rdb.Set(ctx, k.Event(0, "e2"), `{"id":"e2"}`, time.Minute).Err())
	got, err := ReadEventBodies(ctx, tr.rdb, []string{k.Event(0, "e1"), k.Event(0, "e2"), k.Event(0, "e1"), k.Event(0, "gone")})
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{k.Event(0, "e1"): []byte(`{"id":"e1"}`), k.Event(0, "e2"): []byte(`{"id":"e2"}`)}, got)
	got, err = ReadEventBodies(ctx, tr.rdb, nil)
	require.NoError(t, err)
	assert.Empty(t, got)
}
