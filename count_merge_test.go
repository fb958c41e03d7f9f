package webhooks

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMergeCountsInABatch: the rdb.Count calls of a batch go out merged into one (breaker.MergeCounts)
// in the first's place, beside the batch's other scripts as they were, and each call gets its part of
// the merged call's reply, or its error.
func TestMergeCountsInABatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	b := breaker.New(breaker.Config{Client: tr.rdb, Keys: newKeyspace(tr.prefix), BreakAfter: 3, BreakFor: time.Minute})
	registerIDs(t, tr, newKeyspace(tr.prefix), "wh_0", "wh_1")
	now := time.UnixMilli(1_800_000_000_000)
	var counts []*rdb.ScriptCall
	for i := range 3 {
		ks, args := b.CountArgs(now.Add(time.Duration(i)*time.Millisecond), []breaker.Outcome{{WebhookID: "wh_" + strconv.Itoa(i%2), Kind: rdb.CountFailure}})
		counts = append(counts, &rdb.ScriptCall{Ctx: ctx, Script: rdb.Count, Keys: ks, Args: args})
	}
	other := &rdb.ScriptCall{Ctx: ctx, Script: rdb.Lease}
	out, split := mergeCounts([]*rdb.ScriptCall{counts[0], other, counts[1], counts[2]})
	require.Len(t, out, 2, "the counts merged into one, beside the other script")
	require.Same(t, other, out[1])
	out[0].Cmd = rdb.Count.Run(ctx, tr.rdb, out[0].Keys, out[0].Args...)
	require.NoError(t, out[0].Cmd.Err())
	split()
	for i, c := range counts {
		reply, err := c.Cmd.Slice()
		require.NoError(t, err)
		require.Len(t, reply, 2, "call %d: its one outcome's reply", i)
	}
	failures, err := b.Read(ctx, now, "wh_0", "wh_1")
	require.NoError(t, err)
	assert.Equal(t, 2, failures["wh_0"].ConsecutiveFailures)
	assert.Equal(t, 1, failures["wh_1"].ConsecutiveFailures)

	// A merged call that failed fails every call it carried.
	out, split = mergeCounts([]*rdb.ScriptCall{counts[0], counts[1]})
	require.Len(t, out, 1)
	out[0].Cmd = redis.NewCmd(ctx)
	out[0].Cmd.SetErr(errors.New("lost"))
	split()
	for _, c := range counts[:2] {
		require.ErrorContains(t, c.Cmd.Err(), "lost")
	}
}

// TestCountsThroughTheBatcherAreAllCounted: count calls from many goroutines of three Dispatchers,
// merged wherever they meet in a batch, each get a reply for every one of their outcomes, and the
// hourly counters count every outcome once.
func TestCountsThroughTheBatcherAreAllCounted(t *testing.T) {
	t.Parallel()
	const dispatchers, goroutines, calls = 3, 8, 40
	ctx := context.Background()
	tr := newTestRedis(t)
	keys := newKeyspace(tr.prefix)
	registerIDs(t, tr, keys, "wh_0", "wh_1", "wh_2", "wh_3")
	var mu sync.Mutex
	sent := map[string][2]int64{} // webhook -> successes, failures
	var wg sync.WaitGroup
	for d := range dispatchers {
		client := tr.newClient(t)
		// BreakAfter 0: the breaker is off, nothing opens.
		lanes, b := rdb.NewLaneBatcher(client, mergeCounts), breaker.New(breaker.Config{Client: client, Keys: keys, BreakFor: time.Minute})
		for g := range goroutines {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(d), uint64(g)))
				for range calls {
					var outs []breaker.Outcome
					for range 1 + rng.IntN(3) {
						kind := rdb.CountSuccess
						if rng.IntN(10) == 0 {
							kind = rdb.CountFailure
						}
						outs = append(outs, breaker.Outcome{WebhookID: "wh_" + strconv.Itoa(rng.IntN(4)), Kind: kind})
					}
					now := time.Now()
					ks, args := b.CountArgs(now, outs)
					events, err := b.Counted(lanes.Run(ctx, rdb.Count, ks, args...), now, outs)
					if !assert.NoError(t, err) || !assert.Len(t, events, len(outs)) {
						return
					}
					mu.Lock()
					for _, o := range outs {
						c := sent[o.WebhookID]
						if o.Kind == rdb.CountSuccess {
							c[0]++
						} else {
							c[1]++
						}
						sent[o.WebhookID] = c
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	for id, want := range sent {
		var got [2]int64
		for field, v := range tr.rdb.HGetAll(ctx, keys.Hourly(id)).Val() {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			switch field[0] {
			case 's':
				got[0] += n
			case 'f':
				got[1] += n
			}
		}
		assert.Equal(t, want, got, "successes and failures of %s", id)
	}
}

// registerIDs puts webhook ids in the registry's hash of keys, as webhooks the library saved are:
// rdb.Count creates no circuit or counter for a webhook the registry does not hold.
func registerIDs(t testing.TB, tr *testRedis, keys rdb.Keys, ids ...string) {
	t.Helper()
	for _, id := range ids {
		require.NoError(t, tr.rdb.HSet(context.Background(), keys.Webhooks(), id, "{}").Err())
	}
}
