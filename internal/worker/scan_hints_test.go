package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// TestOlderScanDoesNotUndoANewerHint: two passes scan and lease at once (ProcessDue while Run leases);
// the hint a slower pass
// sets from an older read of a shard (empty here) must not replace what a newer read found (a webhook
// due soon), else the shard would wait for the sweep. Whichever order they land in, the newer stays.
func TestOlderScanDoesNotUndoANewerHint(t *testing.T) {
	t.Parallel()
	h, now := NewScanHints(8, 0), time.Now()
	due := now.Add(time.Second).UnixMilli()
	older := ScanRead{Limit: 8, Gen: h.gen.Add(1), Entries: map[int][]rdb.ReadyEntry{0: nil}}
	newer := ScanRead{Limit: 8, Gen: h.gen.Add(1), Entries: map[int][]rdb.ReadyEntry{0: {{Score: due, Webhook: "w"}}}}
	for _, order := range [][]ScanRead{{older, newer}, {newer, older}} {
		for _, r := range order {
			h.AfterLease(now, r, nil, nil)
		}
		assert.Equal(t, due, h.next[0].Load(), "the newer read's hint stays, in either order")
	}
}

// TestScanPlanReadsHintedShardsAndSweeps: the first scan reads every shard (none read yet) and a
// sweep; a scan after it reads only the shards marked or due, and the sweep once per IdleWait.
func TestScanPlanReadsHintedShardsAndSweeps(t *testing.T) {
	t.Parallel()
	h := NewScanHints(32, 0)
	nowMs := time.Now().UnixMilli()
	p := h.Plan(nowMs, ScanHinted)
	assert.Len(t, p.Ready, 32, "nothing read yet: every shard")
	assert.Len(t, p.Inline, SweepInline)
	due, _ := h.Read(p, nowMs, 8, make([][]rdb.ReadyEntry, len(p.Ready)))
	assert.Empty(t, due)
	assert.True(t, h.KnownDue(nowMs).IsZero(), "every shard empty")

	assert.True(t, h.Plan(nowMs+1, ScanHinted).Empty(), "empty shards, the sweep not due: nothing read")
	h.Mark(5)
	assert.Equal(t, []int{5}, h.Plan(nowMs+2, ScanSweep).Ready, "a marked shard is read")
	p = h.Plan(nowMs+IdleWait.Milliseconds(), ScanHinted)
	assert.Len(t, p.Ready, SweepReady, "the sweep once per IdleWait")
	assert.Len(t, p.Inline, SweepInline)
}
