package worker

import (
	"math"
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

// TestScanPlanReadsHintedShardsAndSweeps: the first scan reads every shard (none read yet); a scan
// after it reads only the shards marked or due, and the next SweepShards shard's two zsets once per
// SweepEvery, which is all an idle worker reads.
func TestScanPlanReadsHintedShardsAndSweeps(t *testing.T) {
	t.Parallel()
	h := NewScanHints(32, 0)
	nowMs := time.Now().UnixMilli()
	p := h.Plan(nowMs, ScanHinted)
	assert.Len(t, p.Ready, 32, "nothing read yet: every shard")
	assert.Len(t, p.Inline, 32)
	none := make([]int64, len(p.Inline))
	for i := range none {
		none[i] = math.MaxInt64
	}
	due, _ := h.Read(p, nowMs, 8, make([][]rdb.ReadyEntry, len(p.Ready)), none)
	assert.Empty(t, due)
	assert.Equal(t, nowMs+SweepEvery.Milliseconds(), h.Next(nowMs).UnixMilli(), "every shard empty: the sweep is next")

	assert.True(t, h.Plan(nowMs+1, ScanHinted).Empty(), "empty shards, the sweep not due: nothing read")
	h.Mark(5)
	assert.Equal(t, []int{5}, h.Plan(nowMs+2, ScanSweep).Ready, "a marked shard is read")
	for k := range 3 {
		p = h.Plan(nowMs+int64(k+1)*SweepEvery.Milliseconds(), ScanHinted)
		assert.Equal(t, []int{k + 1}, p.Ready, "the sweep once per SweepEvery, a shard in turn (the first scan swept shard 0)")
		assert.Equal(t, []int{k + 1}, p.Inline)
	}
}

// TestWakeLowersTheHint: a wake heard lowers a shard's hint (never raises it), so the next scan at that
// time reads the zset it names, and Next names that time; a read planned before the wake cannot undo
// it; Resync makes every shard read again.
func TestWakeLowersTheHint(t *testing.T) {
	t.Parallel()
	h := NewScanHints(8, 0)
	nowMs := time.Now().UnixMilli()
	empty := func(p ScanPlan) {
		none := make([]int64, len(p.Inline))
		for i := range none {
			none[i] = math.MaxInt64
		}
		h.Read(p, nowMs, 8, make([][]rdb.ReadyEntry, len(p.Ready)), none)
	}
	empty(h.Plan(nowMs, ScanHinted))
	inFlight := h.Plan(nowMs+1, ScanFull) // planned before the wakes, read after them
	h.Lower(3, rdb.WakeReady, nowMs+500)
	h.Lower(3, rdb.WakeReady, nowMs+900) // later: no change
	h.Lower(6, rdb.WakeInline, nowMs+700)
	empty(inFlight)
	assert.Equal(t, nowMs+500, h.Next(nowMs+1).UnixMilli(), "the earliest wake is next")
	assert.True(t, h.Plan(nowMs+2, ScanHinted).Empty(), "nothing due yet")
	p := h.Plan(nowMs+500, ScanHinted)
	assert.Equal(t, []int{3}, p.Ready, "the ready zset woken, at its time")
	assert.Empty(t, p.Inline)
	p = h.Plan(nowMs+700, ScanHinted)
	assert.Equal(t, []int{3}, p.Ready, "still due: its read was not taken in")
	assert.Equal(t, []int{6}, p.Inline, "the inline zset woken, at its lease's end")
	h.Resync()
	p = h.Plan(nowMs+701, ScanHinted)
	assert.Len(t, p.Ready, 8, "every shard read again")
	assert.Len(t, p.Inline, 8)
}

// TestPassesTheLocalHintFillsReadWakesToo: while this Dispatcher's own due deliveries fill every pass
// (ScanSweep), a shard a wake says has something due is still read, once per IdleWait, so what other
// replicas make due is not left to wait for the local backlog to end.
func TestPassesTheLocalHintFillsReadWakesToo(t *testing.T) {
	t.Parallel()
	h := NewScanHints(8, 0)
	nowMs := time.Now().UnixMilli()
	p := h.Plan(nowMs, ScanHinted)
	none := make([]int64, len(p.Inline))
	for i := range none {
		none[i] = math.MaxInt64
	}
	h.Read(p, nowMs, 8, make([][]rdb.ReadyEntry, len(p.Ready)), none)
	h.Lower(2, rdb.WakeReady, nowMs)
	assert.Empty(t, h.Plan(nowMs+1, ScanSweep).Ready, "within IdleWait of the last hinted read: not yet")
	assert.Equal(t, []int{2}, h.Plan(nowMs+IdleWait.Milliseconds(), ScanSweep).Ready, "an IdleWait later: read")
}
