package webhooks

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// duplicateDispatchAllocs is the allocation budget of a duplicate Dispatch to 4 webhooks (the event
// dispatched before, every v3 feature at its default) on a real Redis, go-redis's single-node client:
// 150 at e07d253 (155 under -race), and a margin.
const duplicateDispatchAllocs = 175

// TestDuplicateDispatchAllocationBudget: a duplicate Dispatch (a producer replaying its events, the
// core use case) stays within its allocation budget. On miniredis the server's allocations are the
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
	d := newTestDispatcher(t, tr, Options{BreakAfter: DefaultBreakAfter})
	rc := newReceiver(t)
	for range 4 {
		mustCreate(t, d, rc, "pool.created")
	}
	evt := Event{Type: "pool.created", ID: "replayed", Data: map[string]any{"pool": "0xabc", "amount": 12}}
	res, err := d.Dispatch(ctx, evt)
	require.NoError(t, err)
	require.Len(t, res, 4)
	allocs := testing.AllocsPerRun(200, func() {
		res, err := d.Dispatch(ctx, evt)
		if err != nil || len(res) != 4 || !res[0].Duplicate {
			t.Errorf("not a duplicate: %v %v", res, err)
		}
	})
	t.Logf("allocations per duplicate Dispatch to 4 webhooks: %.1f (budget %d)", allocs, duplicateDispatchAllocs)
	assert.LessOrEqual(t, allocs, float64(duplicateDispatchAllocs))
	assert.Equal(t, 4, rc.count(), "nothing sent again")
}
