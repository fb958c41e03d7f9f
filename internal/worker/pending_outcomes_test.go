package worker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// TestPendingOutcomesKeepCopiesAndWrite: the outcomes kept are copies (the caller's records change
// after), marked counted when their count ran, and noted as an outage; Write settles those kept for
// less than MaxPendingOutcomeAge, drops the older, and keeps none.
func TestPendingOutcomesKeepCopiesAndWrite(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_000_000)
	recs := []*rdb.Record{
		{Delivery: types.Delivery{ID: "dlv_0", History: []types.Attempt{{StatusCode: 500}}}},
		{Delivery: types.Delivery{ID: "dlv_1"}},
		{Delivery: types.Delivery{ID: "dlv_2"}},
	}
	outcomes := []Outcome{{ID: "dlv_0"}, {ID: "dlv_1"}, {ID: "dlv_2", PendingSince: now.Add(-MaxPendingOutcomeAge - time.Second)}}
	var p PendingOutcomes
	assert.True(t, p.KeepCopies(3, recs, outcomes, nil, true, now), "nothing to keep")
	assert.False(t, p.IsDown(), "nothing kept: no outage")
	require.True(t, p.KeepCopies(3, recs, outcomes, []int{0, 2}, true, now))
	assert.True(t, p.IsDown(), "an outage noted")
	recs[0].History[0].StatusCode = 200 // the caller's record changes after

	var settled []Outcome
	settle := func(_ context.Context, shard int, rs []*rdb.Record, os []Outcome) []error {
		assert.Equal(t, 3, shard)
		assert.Equal(t, 500, rs[0].History[0].StatusCode, "a copy of the record")
		settled = append(settled, os...)
		return make([]error, len(os))
	}
	p.Write(context.Background(), func() time.Time { return now }, settle, slog.New(slog.DiscardHandler))
	require.Len(t, settled, 1, "the outcome kept too long is dropped")
	assert.Equal(t, "dlv_0", settled[0].ID)
	assert.True(t, settled[0].Counted, "its count ran")
	assert.Equal(t, now, settled[0].PendingSince)
	assert.Empty(t, p.Take(), "none kept after the write")
}
