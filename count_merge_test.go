package webhooks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMergedCountEqualsItsCallsInOrder: count calls merged into one (mergeCounts, as a batch of
// concurrent settles sends them) leave every circuit and hourly counter as the same calls run one
// after the other in the batch's order, and each call gets the replies it would have got alone.
func TestMergedCountEqualsItsCallsInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	kinds := []string{rdb.CountSuccess, rdb.CountFailure, rdb.CountFailure, rdb.CountRejected}
	for seed := range uint64(8) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			merged, alone := newKeyspace(fmt.Sprintf("%s_m%d", tr.prefix, seed)), newKeyspace(fmt.Sprintf("%s_a%d", tr.prefix, seed))
			sm, sa := newCircuitStore(tr.rdb, merged), newCircuitStore(tr.rdb, alone)
			now := time.UnixMilli(1_800_000_000_000)
			for round := range 5 {
				// Each call at its own now; the merged call runs at the latest, so the calls run alone
				// do too.
				var mcalls, acalls []*rdb.ScriptCall
				n := 2 + rng.IntN(6)
				latest := now.Add(time.Duration(round*10+n-1) * time.Millisecond)
				for c := range n {
					var outs []countedOutcome
					for range 1 + rng.IntN(4) {
						outs = append(outs, countedOutcome{webhookID: "wh_" + strconv.Itoa(rng.IntN(3)), kind: kinds[rng.IntN(len(kinds))]})
					}
					for o := range outs { // when each was answered: the same for the merged call and the one alone
						outs[o].answered = now.Add(time.Duration(round*10+c) * time.Millisecond)
					}
					mk, ma := sm.countArgs(now.Add(time.Duration(round*10+c)*time.Millisecond), 3, time.Minute, outs)
					ak, aa := sa.countArgs(latest, 3, time.Minute, outs)
					mcalls = append(mcalls, &rdb.ScriptCall{Ctx: ctx, Script: rdb.Count, Keys: mk, Args: ma})
					acalls = append(acalls, &rdb.ScriptCall{Ctx: ctx, Script: rdb.Count, Keys: ak, Args: aa})
				}
				// A lease script between them stays as it is.
				other := &rdb.ScriptCall{Ctx: ctx, Script: rdb.Lease}
				batch := append([]*rdb.ScriptCall{mcalls[0], other}, mcalls[1:]...)
				out, split := mergeCounts(batch)
				require.Len(t, out, 2, "the counts merged into one, beside the other script")
				require.Same(t, other, out[1])
				require.Equal(t, latest.UnixMilli(), out[0].Args[0], "the merged call runs at the latest now")
				out[0].Cmd = rdb.Count.Run(ctx, tr.rdb, out[0].Keys, out[0].Args...)
				require.NoError(t, out[0].Cmd.Err())
				split()
				for i, a := range acalls {
					want, err := rdb.Count.Run(ctx, tr.rdb, a.Keys, a.Args...).Slice()
					require.NoError(t, err)
					got, err := mcalls[i].Cmd.Slice()
					require.NoError(t, err)
					assert.Equal(t, want, got, "round %d, call %d", round, i)
				}
			}
			for w := range 3 {
				id := "wh_" + strconv.Itoa(w)
				assert.Equal(t, tr.rdb.HGet(ctx, merged.Circuits(), id).Val(), tr.rdb.HGet(ctx, alone.Circuits(), id).Val(), "circuit of %s", id)
				assert.Equal(t, tr.rdb.HGetAll(ctx, alone.Hourly(id)).Val(), tr.rdb.HGetAll(ctx, merged.Hourly(id)).Val(), "hourly counts of %s", id)
			}
		})
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
	var mu sync.Mutex
	sent := map[string][2]int64{} // webhook -> successes, failures
	var wg sync.WaitGroup
	for d := range dispatchers {
		client := tr.newClient(t)
		lanes, s := rdb.NewLaneBatcher(client, mergeCounts), newCircuitStore(client, keys)
		for g := range goroutines {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(d), uint64(g)))
				for range calls {
					var outs []countedOutcome
					for range 1 + rng.IntN(3) {
						kind := rdb.CountSuccess
						if rng.IntN(10) == 0 {
							kind = rdb.CountFailure
						}
						outs = append(outs, countedOutcome{webhookID: "wh_" + strconv.Itoa(rng.IntN(4)), kind: kind})
					}
					now := time.Now()
					ks, args := s.countArgs(now, 0, time.Minute, outs) // breaker off: nothing opens
					events, err := countReply(lanes.Run(ctx, rdb.Count, ks, args...), now, outs)
					if !assert.NoError(t, err) || !assert.Len(t, events, len(outs)) {
						return
					}
					mu.Lock()
					for _, o := range outs {
						c := sent[o.webhookID]
						if o.kind == rdb.CountSuccess {
							c[0]++
						} else {
							c[1]++
						}
						sent[o.webhookID] = c
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
			if field[0] == 's' {
				got[0] += n
			} else {
				got[1] += n
			}
		}
		assert.Equal(t, want, got, "successes and failures of %s", id)
	}
}
