package worker

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// What a worker knows of each shard's ready zset between scans, so that a scan reads only the shards
// that may have something due: those whose earliest score, as last read, has come, and those this
// Dispatcher has written to since (a claim left work to the worker, an outcome scheduled a retry, an
// inline attempt was taken over). What other replicas write is found by the sweep: the ready zsets of
// the next SweepReady (14) shards in turn, read by every idle poll and by at most one scan per IdleWait
// while busy, so a sweep of every shard takes Shards/14 of them (5 polls, 1.25s, with the default 64
// shards). The sweep also reads the inline zsets of the next SweepInline (2) shards, for inline
// attempts whose lease ended without an outcome: found within Shards/2 polls of their lease's end (8s
// with 64 shards; a lease is at least 2s, twice Options.Timeout).

// IdleWait is the longest Run waits when nothing is due, and how often a busy worker sweeps.
const IdleWait = 250 * time.Millisecond

// IdleScanShards bounds the keys a sweep reads: an idle worker costs Redis at most IdleScanShards
// commands per IdleWait (64 commands/s), whatever the shard count: SweepReady shards' ready zsets and
// SweepInline shards' inline zsets.
const (
	IdleScanShards = 16
	SweepInline    = 2
	SweepReady     = IdleScanShards - SweepInline
)

// ScanShardsPerPass bounds the shards a scan reads for their hints (beyond the sweep): with a backlog
// in every shard, a pass that read them all would read far more queues than its free slots can take
// from; a few shards in turn give each pass enough due deliveries, each shard its turn within
// Shards/ScanShardsPerPass passes.
const ScanShardsPerPass = 4

// ScanMode is which shards a scan reads.
type ScanMode int

const (
	ScanHinted ScanMode = iota // those that may have something due, and a sweep once per IdleWait
	ScanIdle                   // those that may have something due, and a sweep: an idle poll
	ScanFull                   // every shard's ready and inline zsets: ProcessDue
	ScanSweep                  // the sweep once per IdleWait and the shards marked: the local hint fills the pass
)

// ScanHints is what a worker knows of each shard's ready zset between scans (see the file comment).
// Safe for concurrent use.
type ScanHints struct {
	next        []atomic.Int64 // per shard: the earliest ready score its last read saw (ms); 0: not read yet; MaxInt64: empty
	dirty       []atomic.Bool  // per shard: this Dispatcher wrote its schedule since its last read
	sweep       atomic.Uint32  // where the next sweep of ready zsets starts
	sweepInline atomic.Uint32  // where the next sweep of inline zsets starts
	lastSweep   atomic.Int64   // when the last sweep was read (ms, the Dispatcher's clock)
	rotate      atomic.Uint32  // where a scan starts looking for shards its hints say to read
	gen         atomic.Uint64  // the generation of the latest scan read (setNext)

	mu     sync.Mutex
	nextOf []uint64 // per shard: the generation of the read next holds (setNext)
}

// NewScanHints returns the hints of a keyspace of shards shards, nothing read yet, its sweeps starting
// at shard start (modulo shards: replicas start theirs at different shards).
func NewScanHints(shards int, start uint32) *ScanHints {
	h := &ScanHints{next: make([]atomic.Int64, shards), dirty: make([]atomic.Bool, shards),
		nextOf: make([]uint64, shards)}
	h.sweep.Store(start)
	h.sweepInline.Store(start)
	return h
}

// Mark tells the worker that this Dispatcher wrote a shard's schedule: its next scan reads it.
func (h *ScanHints) Mark(shard int) { h.dirty[shard].Store(true) }

// ScanPlan is what one scan reads: the shards whose ready zsets and inline zsets it reads, and its
// generation (a read sent later is newer).
type ScanPlan struct {
	Ready  []int
	Inline []int
	Gen    uint64
	Left   bool // shards its hints said to read were left for the next pass (ScanShardsPerPass)
}

// Empty reports whether the plan reads nothing.
func (p ScanPlan) Empty() bool { return len(p.Ready) == 0 && len(p.Inline) == 0 }

// Plan chooses the shards a scan at nowMs reads: those that may have something due, plus a sweep
// (ScanIdle, or ScanHinted when the last sweep is IdleWait old) or every shard (ScanFull). The shards
// it reads are no longer marked: a write marked after it is read next time (Unread marks them again
// when the read fails).
func (h *ScanHints) Plan(nowMs int64, mode ScanMode) ScanPlan {
	var p ScanPlan
	shards := len(h.next)
	read := make([]bool, shards)
	switch last := h.lastSweep.Load(); {
	case mode == ScanFull:
		for s := range shards {
			read[s] = true
			p.Inline = append(p.Inline, s)
		}
	case mode == ScanIdle || nowMs-last >= IdleWait.Milliseconds() || nowMs < last:
		h.lastSweep.Store(nowMs)
		first := int((h.sweep.Add(SweepReady) - SweepReady) % uint32(shards))
		for k := range min(shards, SweepReady) {
			read[(first+k)%shards] = true
		}
		first = int((h.sweepInline.Add(SweepInline) - SweepInline) % uint32(shards))
		for k := range min(shards, SweepInline) {
			p.Inline = append(p.Inline, (first+k)%shards)
		}
	}
	hinted := 0 // shards read for their hint (not the sweep): at most ScanShardsPerPass, in turn
	first := int(h.rotate.Add(1) % uint32(shards))
	for k := range shards {
		s := (first + k) % shards
		switch next := h.next[s].Load(); {
		case read[s]:
		case mode == ScanSweep && !h.dirty[s].Load(): // this Dispatcher's own writes are read even so
		case next == 0: // never read: every such shard in the first pass
			read[s] = true
		case next > nowMs && !h.dirty[s].Load():
		case hinted < ScanShardsPerPass:
			read[s] = true
			hinted++
		default:
			p.Left = true
		}
		if read[s] {
			h.dirty[s].Store(false) // before the read: a write marked after it is read next time
			p.Ready = append(p.Ready, s)
		}
	}
	slices.Sort(p.Ready) // read and reported in shard order
	if !p.Empty() {
		p.Gen = h.gen.Add(1) // before the read: a read sent later is newer
	}
	return p
}

// Unread marks again the shards whose ready zsets a plan read, when the read failed: the next scan
// reads them.
func (h *ScanHints) Unread(p ScanPlan) {
	for _, s := range p.Ready {
		h.dirty[s].Store(true)
	}
}

// Due is a webhook with deliveries due in a shard.
type Due struct {
	Shard int
	ID    string
	Local bool // found in the local hint only (LocalDue): its due ids are known, its queue is not read
}

// ScanRead is what a scan read of the ready zsets: per shard read, its entries (at most Limit+1).
type ScanRead struct {
	Limit   int
	Entries map[int][]rdb.ReadyEntry
	Left    bool   // as ScanPlan.Left
	Gen     uint64 // the read's generation
}

// Read takes in what a plan's read of the ready zsets found at nowMs (ready, per shard of p.Ready;
// at most limit+1 entries each): the shards' earliest scores become their hints, and it returns the
// webhooks due and what was read (for AfterLease).
func (h *ScanHints) Read(p ScanPlan, nowMs int64, limit int, ready [][]rdb.ReadyEntry) ([]Due, ScanRead) {
	var due []Due
	read := ScanRead{Limit: limit, Entries: make(map[int][]rdb.ReadyEntry, len(p.Ready)), Left: p.Left, Gen: p.Gen}
	for k, s := range p.Ready {
		read.Entries[s] = ready[k]
		first := int64(math.MaxInt64)
		for i, z := range ready[k] {
			if i == 0 {
				first = z.Score
			}
			if z.Score > nowMs {
				break
			}
			due = append(due, Due{Shard: s, ID: z.Webhook})
		}
		h.setNext(s, p.Gen, first)
	}
	return due, read
}

// AfterLease sets the hint of each shard a scan read to its earliest ready score as the lease left
// it: the entries read, with the scores of the webhooks the lease retimed (heads; 0 when one left the
// ready zset) in place of those read, and the webhooks whose due deliveries the local hint served
// (local) counted as due LocalReadEvery after now, when their queue is read again for what another
// replica queued there (LocalDue.Serves). So a shard whose due webhooks were all taken is not read
// again until its next due time, though the claims of this Dispatcher's own deliveries keep lowering
// its ready scores.
func (h *ScanHints) AfterLease(now time.Time, read ScanRead, heads map[Queue]int64, local map[Queue]bool) {
	for s, entries := range read.Entries {
		next := int64(math.MaxInt64)
		for _, z := range entries {
			score := z.Score
			if id := z.Webhook; id != "" {
				if head, ok := heads[Queue{Shard: s, Webhook: id}]; ok {
					score = head
				} else if local[Queue{Shard: s, Webhook: id}] {
					score = max(score, now.UnixMilli()+LocalReadEvery)
				}
			}
			if score > 0 {
				next = min(next, score)
			}
		}
		if n := len(entries); n > read.Limit {
			next = min(next, entries[n-1].Score) // entries beyond the read score at least this
		}
		h.setNext(s, read.Gen, next)
	}
}

// setNext sets a shard's hint from a read of generation gen, unless a newer read set it already:
// passes may read and lease at once (ProcessDue while Run leases), and a slower pass's older read must
// not undo what a newer one found (a shard hinted empty or due later would wait for the sweep).
func (h *ScanHints) setNext(shard int, gen uint64, next int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if gen >= h.nextOf[shard] {
		h.nextOf[shard] = gen
		h.next[shard].Store(next)
	}
}

// KnownDue is the earliest ready score after nowMs that the hints hold (zero if none).
func (h *ScanHints) KnownDue(nowMs int64) time.Time {
	next := int64(math.MaxInt64)
	for s := range h.next {
		if v := h.next[s].Load(); v > nowMs && v < next {
			next = v
		}
	}
	if next == math.MaxInt64 {
		return time.Time{}
	}
	return time.UnixMilli(next)
}
