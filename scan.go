package webhooks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/worker"
)

// idleScanShards bounds the keys a sweep reads: an idle worker costs Redis at most idleScanShards
// commands per idleWait (64 commands/s), whatever the shard count: sweepReady shards' ready zsets and
// sweepInline shards' inline zsets.
const (
	idleScanShards = 16
	sweepInline    = 2
	sweepReady     = idleScanShards - sweepInline
)

// scanMode is which shards scanReady reads.
type scanMode int

const (
	scanHinted scanMode = iota // those that may have something due, and a sweep once per idleWait
	scanIdle                   // those that may have something due, and a sweep: an idle poll
	scanFull                   // every shard's ready and inline zsets: ProcessDue
	scanSweep                  // the sweep once per idleWait and the shards marked: the local hint fills the pass
)

// scanHints is what a Dispatcher's worker knows of each shard's ready zset between scans, so that a
// scan reads only the shards that may have something due: those whose earliest score, as last read,
// has come, and those this Dispatcher has written to since (a claim left work to the worker, an
// outcome scheduled a retry, an inline attempt was taken over). What other replicas write is found by
// the sweep: the ready zsets of the next sweepReady (14) shards in turn, read by every idle poll and by
// at most one scan per idleWait while busy, so a sweep of every shard takes Shards/14 of them (5 polls,
// 1.25s, with the default 64 shards). The sweep also reads the inline zsets of the next sweepInline (2)
// shards, for inline attempts whose lease ended without an outcome: found within Shards/2 polls of
// their lease's end (8s with 64 shards; a lease is at least 2s, twice Options.Timeout).
type scanHints struct {
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

// setNext sets a shard's hint from a read of generation gen, unless a newer read set it already: Run's
// two lanes read and lease at once, and a slower pass's older read must not undo what a newer one
// found (a shard hinted empty or due later would wait for the sweep).
func (h *scanHints) setNext(shard int, gen uint64, next int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if gen >= h.nextOf[shard] {
		h.nextOf[shard] = gen
		h.next[shard].Store(next)
	}
}

// scanShardsPerPass bounds the shards a scan reads for their hints (beyond the sweep): with a backlog
// in every shard, a pass that read them all would read far more queues than its free slots can take
// from; a few shards in turn give each pass enough due deliveries, each shard its turn within
// Shards/scanShardsPerPass passes.
const scanShardsPerPass = 4

// hints returns the Dispatcher's scan hints, made on first use (the keyspace's layout is loaded).
func (d *Dispatcher) hints() *scanHints {
	d.hintsOnce.Do(func() {
		h := &scanHints{next: make([]atomic.Int64, d.keys.Shards), dirty: make([]atomic.Bool, d.keys.Shards),
			nextOf: make([]uint64, d.keys.Shards)}
		h.sweep.Store(d.nextShard.Load())
		h.sweepInline.Store(d.nextShard.Load())
		d.hintsPtr = h
	})
	return d.hintsPtr
}

// markShard tells the worker that this Dispatcher wrote a shard's schedule: its next scan reads it.
func (d *Dispatcher) markShard(shard int) { d.hints().dirty[shard].Store(true) }

// queueLocal tells this Dispatcher's worker, while Run is going, that delivery id of webhook is due in
// shard at at: it leases it by id (worker.LocalDue); with no Run going, or the hint full, the worker's next
// scan reads the shard instead.
func (d *Dispatcher) queueLocal(shard int, webhook, id string, at time.Time) {
	if d.running.Load() == 0 || !d.local.Add(shard, webhook, id, at.UnixMilli(), d.now().UnixMilli()) {
		d.markShard(shard)
	}
}

// scanRead is what a scan read of the ready zsets: per shard read, its entries (at most limit+1);
// left is set when shards its hints said to read were left for the next pass (scanShardsPerPass).
type scanRead struct {
	limit   int
	entries map[int][]redis.Z
	left    bool
	gen     uint64 // the read's generation (scanHints.setNext)
}

// scanReady reads, in one round trip, the webhooks with deliveries due (up to limit per shard) in the
// shards that may have some (scanHints), plus a sweep (scanIdle, or scanHinted when the last sweep is
// idleWait old) or every shard (scanFull), and the inline attempts whose lease has ended in the inline
// zsets read. It returns those, what it read (for afterLease), and the earliest due time in the
// future that it knows of.
func (d *Dispatcher) scanReady(ctx context.Context, now time.Time, limit int, mode scanMode) ([]dueWebhook, []stray, scanRead, time.Time, error) {
	read0 := scanRead{limit: limit}
	h, shards, nowMs := d.hints(), d.keys.Shards, now.UnixMilli()
	read := make([]bool, shards)
	var inlines []int
	switch last := h.lastSweep.Load(); {
	case mode == scanFull:
		for s := range shards {
			read[s] = true
			inlines = append(inlines, s)
		}
	case mode == scanIdle || nowMs-last >= idleWait.Milliseconds() || nowMs < last:
		h.lastSweep.Store(nowMs)
		first := int((h.sweep.Add(sweepReady) - sweepReady) % uint32(shards))
		for k := range min(shards, sweepReady) {
			read[(first+k)%shards] = true
		}
		first = int((h.sweepInline.Add(sweepInline) - sweepInline) % uint32(shards))
		for k := range min(shards, sweepInline) {
			inlines = append(inlines, (first+k)%shards)
		}
	}
	pipe := d.rdb.Pipeline()
	heads := make([]*redis.ZSliceCmd, shards)
	hinted := 0 // shards read for their hint (not the sweep): at most scanShardsPerPass, in turn
	first := int(h.rotate.Add(1) % uint32(shards))
	for k := range shards {
		s := (first + k) % shards
		switch next := h.next[s].Load(); {
		case read[s]:
		case mode == scanSweep && !h.dirty[s].Load(): // this Dispatcher's own writes are read even so
		case next == 0: // never read: every such shard in the first pass
			read[s] = true
		case next > nowMs && !h.dirty[s].Load():
		case hinted < scanShardsPerPass:
			read[s] = true
			hinted++
		default:
			read0.left = true
		}
		if read[s] {
			h.dirty[s].Store(false) // before the read: a write marked after it is read next time
			heads[s] = pipe.ZRangeWithScores(ctx, d.keys.Ready(s), 0, int64(limit))
		}
	}
	inline := make([]*redis.ZSliceCmd, len(inlines))
	for k, s := range inlines {
		inline[k] = pipe.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: d.keys.Inline(s), ByScore: true,
			Start: "-inf", Stop: strconv.FormatInt(nowMs, 10), Count: int64(limit)})
	}
	if pipe.Len() == 0 {
		return nil, nil, read0, d.knownDue(nowMs), nil
	}
	gen := h.gen.Add(1) // before the read: a read sent later is newer
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		rdb.ReloadOnTransport(d.rdb, err)
		for s, c := range heads {
			if c != nil {
				h.dirty[s].Store(true) // not read: read it again
			}
		}
		return nil, nil, read0, time.Time{}, fmt.Errorf("webhooks: read schedules: %w", err)
	}
	due, strays, got := d.readScan(nowMs, gen, heads, inline, inlines)
	got.limit, got.left = limit, read0.left
	return due, strays, got, d.knownDue(nowMs), nil
}

// afterLease sets the hint of each shard a scan read to its earliest ready score as the lease left
// it: the entries read, with the scores of the webhooks the lease retimed (heads; 0 when one left the
// ready zset) in place of those read, and the webhooks whose due deliveries the local hint served
// (local) counted as due localReadEvery after now, when their queue is read again for what another
// replica queued there (worker.LocalDue.Serves). So a shard whose due webhooks were all taken is not read
// again until its next due time, though the claims of this Dispatcher's own deliveries keep lowering
// its ready scores.
func (d *Dispatcher) afterLease(now time.Time, read scanRead, heads map[worker.Queue]int64, local map[worker.Queue]bool) {
	h := d.hints()
	for s, entries := range read.entries {
		next := int64(math.MaxInt64)
		for _, z := range entries {
			score := int64(z.Score)
			if id, _ := z.Member.(string); id != "" {
				if head, ok := heads[worker.Queue{Shard: s, Webhook: id}]; ok {
					score = head
				} else if local[worker.Queue{Shard: s, Webhook: id}] {
					score = max(score, now.UnixMilli()+worker.LocalReadEvery)
				}
			}
			if score > 0 {
				next = min(next, score)
			}
		}
		if n := len(entries); n > read.limit {
			next = min(next, int64(entries[n-1].Score)) // entries beyond the read score at least this
		}
		h.setNext(s, read.gen, next)
	}
}

// readScan reads a scan's replies, of generation gen: the due webhooks of the ready zsets read (heads,
// per shard; nil for a shard not read), whose earliest scores become the shards' hints, and the strays
// of the inline zsets read (inline, of the shards inlines).
func (d *Dispatcher) readScan(nowMs int64, gen uint64, heads, inline []*redis.ZSliceCmd, inlines []int) ([]dueWebhook, []stray, scanRead) {
	h := d.hints()
	var due []dueWebhook
	read := scanRead{entries: map[int][]redis.Z{}, gen: gen}
	for s, cmd := range heads {
		if cmd == nil {
			continue
		}
		read.entries[s] = cmd.Val()
		first := int64(math.MaxInt64)
		for i, z := range cmd.Val() {
			if i == 0 {
				first = int64(z.Score)
			}
			if z.Score > float64(nowMs) {
				break
			}
			id, _ := z.Member.(string)
			due = append(due, dueWebhook{shard: s, id: id})
		}
		h.setNext(s, gen, first)
	}
	var strays []stray
	for k, cmd := range inline {
		for _, z := range cmd.Val() {
			e, _ := z.Member.(string)
			if id, webhookID, ok := rdb.SplitInlineEntry(e); ok {
				strays = append(strays, stray{shard: inlines[k], id: id, webhookID: webhookID})
			}
		}
	}
	return due, strays, read
}

// knownDue is the earliest ready score in the future that the scan hints hold (zero if none).
func (d *Dispatcher) knownDue(nowMs int64) time.Time {
	next := int64(math.MaxInt64)
	for s := range d.hints().next {
		if v := d.hints().next[s].Load(); v > nowMs && v < next {
			next = v
		}
	}
	if next == math.MaxInt64 {
		return time.Time{}
	}
	return rdb.MilliTime(next)
}
