package breaker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMergedCountEqualsItsCallsInOrder: count calls merged into one (MergeCounts, as a batch of
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
			merged, alone := rdb.KeysOf(fmt.Sprintf("%s_m%d", tr.prefix, seed), 1), rdb.KeysOf(fmt.Sprintf("%s_a%d", tr.prefix, seed), 1)
			sm, sa := newStore(tr.rdb, merged), newStore(tr.rdb, alone)
			for w := range 3 {
				sm.registered(ctx, Outcome{WebhookID: "wh_" + strconv.Itoa(w)})
				sa.registered(ctx, Outcome{WebhookID: "wh_" + strconv.Itoa(w)})
			}
			now := time.UnixMilli(1_800_000_000_000)
			for round := range 5 {
				// Each call at its own now; the merged call runs at the latest, so the calls run alone
				// do too.
				var mcalls, acalls []CountCall
				n := 2 + rng.IntN(6)
				latest := now.Add(time.Duration(round*10+n-1) * time.Millisecond)
				for c := range n {
					var outs []Outcome
					for range 1 + rng.IntN(4) {
						outs = append(outs, Outcome{WebhookID: "wh_" + strconv.Itoa(rng.IntN(3)), Kind: kinds[rng.IntN(len(kinds))]})
					}
					for o := range outs { // when each was answered: the same for the merged call and the one alone
						outs[o].Answered = now.Add(time.Duration(round*10+c) * time.Millisecond)
					}
					mk, ma := sm.countArgs(now.Add(time.Duration(round*10+c)*time.Millisecond), 3, time.Minute, outs)
					ak, aa := sa.countArgs(latest, 3, time.Minute, outs)
					mcalls = append(mcalls, CountCall{Keys: mk, Args: ma})
					acalls = append(acalls, CountCall{Keys: ak, Args: aa})
				}
				m, split, ok := MergeCounts(mcalls)
				require.True(t, ok, "the counts merged into one")
				require.Equal(t, latest.UnixMilli(), m.Args[0], "the merged call runs at the latest now")
				reply, err := rdb.Count.Run(ctx, tr.rdb, m.Keys, m.Args...).Slice()
				require.NoError(t, err)
				parts, err := split(reply)
				require.NoError(t, err)
				require.Len(t, parts, len(mcalls))
				for i, a := range acalls {
					want, err := rdb.Count.Run(ctx, tr.rdb, a.Keys, a.Args...).Slice()
					require.NoError(t, err)
					assert.Equal(t, want, parts[i], "round %d, call %d", round, i)
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

// TestMergeCountsRefuses: one call, or calls with other settings or not as CountArgs makes them, are
// not merged; a reply of another length than the merged call's outcomes is an error.
func TestMergeCountsRefuses(t *testing.T) {
	t.Parallel()
	s := newStore(nil, rdb.KeysOf("p", 1))
	now := time.UnixMilli(1_800_000_000_000)
	outs := []Outcome{{WebhookID: "wh_1", Kind: rdb.CountFailure}}
	call := func(breakAfter int) CountCall {
		k, a := s.countArgs(now, breakAfter, time.Minute, outs)
		return CountCall{Keys: k, Args: a}
	}
	_, _, ok := MergeCounts([]CountCall{call(3)})
	require.False(t, ok, "one call")
	_, _, ok = MergeCounts([]CountCall{call(3), call(4)})
	require.False(t, ok, "another breakAfter")
	bad := call(3)
	bad.Args = bad.Args[:len(bad.Args)-1]
	_, _, ok = MergeCounts([]CountCall{call(3), bad})
	require.False(t, ok, "an outcome cut short")
	m, split, ok := MergeCounts([]CountCall{call(3), call(3)})
	require.True(t, ok)
	require.Len(t, m.Keys, 3, "the circuits, the webhooks and one hourly key")
	_, err := split([]any{int64(0), ""})
	require.ErrorContains(t, err, "reply of 2 items")
}
