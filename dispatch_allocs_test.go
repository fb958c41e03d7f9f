package webhooks

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDuplicateDispatchAllocationBudget: a duplicate Dispatch to 4 webhooks (a producer replaying its
// events, the core use case; every v3 feature at its default) stays within its allocation budget, on a
// real Redis with go-redis's single-node client: answered by rdb.FindDuplicates when this Dispatcher
// claimed the event (67 allocations at 58ed809, 68–70 under -race), or by the claim when
// another Dispatcher did (148–150, 153–155 under -race). On miniredis the server's allocations are the
// process's too, so it runs on a real Redis only.
func TestDuplicateDispatchAllocationBudget(t *testing.T) {
	tr := newTestRedis(t)
	switch {
	case tr.mini != nil:
		t.Skip("miniredis allocates in the test's process: runs on a real Redis (WEBHOOKS_REDIS_ADDR)")
	case tr.isCluster():
		t.Skip("the budget is the single-node client's; a cluster client's routing allocates more")
	}
	ctx := context.Background()
	first := newTestDispatcher(t, tr, Options{BreakAfter: DefaultBreakAfter})
	rc := newReceiver(t)
	for range 4 {
		mustCreate(t, first, rc, "pool.created")
	}
	const runs = 200
	events := make([]Event, runs+1) // AllocsPerRun calls once more, to warm up
	for i := range events {
		events[i] = Event{Type: "pool.created", ID: fmt.Sprint("replayed-", i), Data: map[string]any{"pool": "0xabc", "amount": 12}}
		res, err := first.Dispatch(ctx, events[i])
		require.NoError(t, err)
		require.Len(t, res, 4)
	}
	for _, c := range []struct {
		name   string
		d      *Dispatcher
		budget float64
	}{
		{"claimed by this Dispatcher", first, 85},
		{"claimed by another Dispatcher", newTestDispatcher(t, tr, Options{BreakAfter: DefaultBreakAfter}), 175},
	} {
		next := 0
		allocs := testing.AllocsPerRun(runs, func() {
			res, err := c.d.Dispatch(ctx, events[next])
			next++
			if err != nil || len(res) != 4 || !res[0].Duplicate {
				t.Errorf("not a duplicate: %v %v", res, err)
			}
		})
		t.Logf("%s: allocations per duplicate Dispatch to 4 webhooks: %.1f (budget %.0f)", c.name, allocs, c.budget)
		assert.LessOrEqual(t, allocs, c.budget, c.name)
	}
	assert.Equal(t, 4*len(events), rc.count(), "nothing sent again")
}
