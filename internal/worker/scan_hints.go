package worker

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// What a worker knows of each shard's schedule between scans, so that a scan reads only the shards
// that may have something due, and Run sleeps until the earliest time one may: per shard, the earliest
// ready score and the earliest inline lease end, as last read or heard of since. It hears of every
// write that makes something due sooner than a read showed (the scripts publish it, lib/wake.lua; the
// Listener lowers the hint: Lower), and its own Dispatcher's writes mark their shards (Mark). A scan
// reads the ready zsets of the shards whose hint has come or that are marked, and the inline zsets of
// the shards whose earliest lease has ended; a shard read is hinted again by what the read found.
//
// A wake lost with the subscription's connection is made up for when the subscription is back: every
// shard is read again (Resync). What could still be missed (a wake lost between a cluster's nodes) the
// sweep finds: every SweepEvery (4s), whatever else a pass reads, it reads the ready and inline zsets of
// the next SweepShards (1) shard in turn, so every shard within Shards × SweepEvery (4 min 16 s with the
// default 64 shards), at SweepShards × 2 commands per SweepEvery (0.5 commands/s) whatever the shard
// count.

// SweepEvery is how often a worker reads the next shard of its sweep: an idle worker's only reads.
const SweepEvery = 4 * time.Second

// SweepShards is how many shards a sweep reads: their ready and inline zsets, one command each.
const SweepShards = 1

// IdleWait is the longest Run waits with no slot free (an ending attempt pokes it), and its first wait
// before it reads again a shard whose due deliveries a pass could not take (parked, or at a limit):
// that wait doubles, up to SweepEvery, while passes lease nothing.
const IdleWait = 250 * time.Millisecond

// ScanShardsPerPass bounds the shards a scan reads for their hints (beyond the sweep), ready and inline
// zsets each: with a backlog in every shard, a pass that read them all would read far more queues than
// its free slots can take from; a few shards in turn give each pass enough due deliveries, each shard
// its turn within Shards/ScanShardsPerPass passes.
const ScanShardsPerPass = 4

// ScanMode is which shards a scan reads.
type ScanMode int

const (
	ScanHinted ScanMode = iota // those that may have something due, and the sweep when it is due
	ScanFull                   // every shard's ready and inline zsets: ProcessDue
	ScanSweep                  // the sweep when due and the shards marked, and those hinted once per IdleWait: the local hint fills the pass
)

// ScanHints is what a worker knows of each shard's schedule between scans (see the file comment).
// Safe for concurrent use.
type ScanHints struct {
	// Per shard, the earliest ready score (next) and inline lease end (inline) known, in ms: 0 when not
	// read yet (read it), math.MaxInt64 when empty.
	next, inline []atomic.Int64
	dirty        []atomic.Bool // per shard: this Dispatcher wrote its schedule since its last read
	sweep        atomic.Uint32 // the next shard the sweep reads
	lastSweep    atomic.Int64  // when the sweep last read a shard (ms, the Dispatcher's clock)
	sweepEvery   atomic.Int64  // SweepEvery, in ms (SetSweepEvery)
	lastHinted   atomic.Int64  // when a scan last read the shards its hints said to (ms)
	rotate       atomic.Uint32 // where a scan starts looking for shards its hints say to read
	gen          atomic.Uint64 // the generation of the latest read planned or wake heard (setNext)

	mu               sync.Mutex
	nextOf, inlineOf []uint64 // per shard: the generation of what next, inline hold (setNext)
}

// NewScanHints returns the hints of a keyspace of shards shards, nothing read yet, its sweep starting
// at shard start (modulo shards: replicas start theirs at different shards).
func NewScanHints(shards int, start uint32) *ScanHints {
	h := &ScanHints{next: make([]atomic.Int64, shards), inline: make([]atomic.Int64, shards),
		dirty: make([]atomic.Bool, shards), nextOf: make([]uint64, shards), inlineOf: make([]uint64, shards)}
	h.sweep.Store(start)
	h.sweepEvery.Store(SweepEvery.Milliseconds())
	return h
}

// SetSweepEvery sets how often the sweep reads a shard, for tests: a long period shows that what a
// test waits for came from a wake, not the sweep.
func (h *ScanHints) SetSweepEvery(d time.Duration) { h.sweepEvery.Store(d.Milliseconds()) }

// Mark tells the worker that this Dispatcher wrote a shard's schedule: its next scan reads it.
func (h *ScanHints) Mark(shard int) { h.dirty[shard].Store(true) }

// Lower takes in a wake (lib/wake.lua): a zset of shard (its ready zset, or its inline zset) has
// something due at atMs. A read planned before it cannot undo it (setNext).
func (h *ScanHints) Lower(shard int, kind rdb.WakeKind, atMs int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	hint, of := &h.next[shard], h.nextOf
	if kind == rdb.WakeInline {
		hint, of = &h.inline[shard], h.inlineOf
	}
	of[shard] = h.gen.Add(1)
	if v := hint.Load(); v != 0 && atMs < v {
		hint.Store(max(atMs, 1))
	}
}

// Resync makes the next scan read every shard's ready and inline zsets (the wakes sent while the
// subscription was down are lost); a read planned before it cannot undo it.
func (h *ScanHints) Resync() {
	h.mu.Lock()
	defer h.mu.Unlock()
	gen := h.gen.Add(1)
	for s := range h.next {
		h.nextOf[s], h.inlineOf[s] = gen, gen
		h.next[s].Store(0)
		h.inline[s].Store(0)
	}
}

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

// Plan chooses the shards a scan at nowMs reads: those whose hint has come (ready or inline; with
// ScanSweep, once per IdleWait), those marked, and the next of the sweep when it is due (SweepEvery
// since the last), or every shard (ScanFull). The shards it reads are no longer marked: a write marked after it is read next time
// (Unread marks them again when the read fails).
func (h *ScanHints) Plan(nowMs int64, mode ScanMode) ScanPlan {
	var p ScanPlan
	shards := len(h.next)
	ready, inline := make([]bool, shards), make([]bool, shards)
	if last := h.lastHinted.Load(); mode == ScanSweep && (nowMs-last >= IdleWait.Milliseconds() || nowMs < last) {
		mode = ScanHinted // what others made due is not left waiting while this Dispatcher's own fill the passes
	}
	if mode != ScanSweep {
		h.lastHinted.Store(nowMs)
	}
	switch last := h.lastSweep.Load(); {
	case mode == ScanFull:
		for s := range shards {
			ready[s], inline[s] = true, true
		}
	case nowMs-last >= h.sweepEvery.Load() || nowMs < last:
		h.lastSweep.Store(nowMs)
		first := int((h.sweep.Add(SweepShards) - SweepShards) % uint32(shards))
		for k := range min(shards, SweepShards) {
			ready[(first+k)%shards], inline[(first+k)%shards] = true, true
		}
	}
	hinted, hintedInline := 0, 0 // shards read for their hint: at most ScanShardsPerPass of each, in turn
	first := int(h.rotate.Add(1) % uint32(shards))
	for k := range shards {
		s := (first + k) % shards
		switch next := h.next[s].Load(); {
		case ready[s]:
		case mode == ScanSweep && !h.dirty[s].Load(): // this Dispatcher's own writes are read even so
		case next == 0: // never read: every such shard in the first pass
			ready[s] = true
		case next > nowMs && !h.dirty[s].Load():
		case hinted < ScanShardsPerPass:
			ready[s] = true
			hinted++
		default:
			p.Left = true
		}
		switch end := h.inline[s].Load(); {
		case inline[s], end > nowMs:
		case end == 0:
			inline[s] = true
		case hintedInline < ScanShardsPerPass:
			inline[s] = true
			hintedInline++
		default:
			p.Left = true
		}
		if ready[s] {
			h.dirty[s].Store(false) // before the read: a write marked after it is read next time
			p.Ready = append(p.Ready, s)
		}
		if inline[s] {
			p.Inline = append(p.Inline, s)
		}
	}
	slices.Sort(p.Ready) // read and reported in shard order
	slices.Sort(p.Inline)
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

// Read takes in what a plan's read found at nowMs: of the ready zsets (ready, per shard of p.Ready; at
// most limit+1 entries each) and the earliest lease end of the inline zsets (inlineNext, per shard of
// p.Inline; rdb.ReadDue). The shards' earliest scores become their hints, and it returns the webhooks
// due and what was read (for AfterLease).
func (h *ScanHints) Read(p ScanPlan, nowMs int64, limit int, ready [][]rdb.ReadyEntry, inlineNext []int64) ([]Due, ScanRead) {
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
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, s := range p.Inline {
		if k < len(inlineNext) && p.Gen >= h.inlineOf[s] {
			h.inlineOf[s] = p.Gen
			h.inline[s].Store(max(inlineNext[k], 1))
		}
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

// setNext sets a shard's ready hint from a read of generation gen, unless a newer read set it already
// or a wake was heard since the read was planned (Lower): passes may read and lease at once (ProcessDue
// while Run leases), and a slower pass's older read must not undo what a newer one found or a wake
// told (a shard hinted empty or due later would wait for the sweep).
func (h *ScanHints) setNext(shard int, gen uint64, next int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if gen >= h.nextOf[shard] {
		h.nextOf[shard] = gen
		h.next[shard].Store(max(next, 1))
	}
}

// Next is the earliest time a scan after nowMs has something to read: a shard's ready score or inline
// lease end that the hints hold, or the sweep. A time not after nowMs is a shard with something due
// that the last pass could not take (or read: ScanShardsPerPass).
func (h *ScanHints) Next(nowMs int64) time.Time {
	next := h.lastSweep.Load() + h.sweepEvery.Load()
	if last := h.lastSweep.Load(); last == 0 || nowMs < last {
		next = nowMs // no sweep yet, or the clock went back: sweep now
	}
	for s := range h.next {
		next = min(next, readAt(h.next[s].Load(), nowMs), readAt(h.inline[s].Load(), nowMs))
	}
	return time.UnixMilli(next)
}

// readAt is when a hint says to read its zset: at its time, or now when not read yet (0).
func readAt(hint, nowMs int64) int64 {
	if hint == 0 {
		return nowMs
	}
	return hint
}
