package webhooks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	ks "github.com/smartdrop/webhooks/internal/keyspace"
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
}

// hints returns the Dispatcher's scan hints, made on first use (the keyspace's layout is loaded).
func (d *Dispatcher) hints() *scanHints {
	d.hintsOnce.Do(func() {
		h := &scanHints{next: make([]atomic.Int64, d.keys.Shards), dirty: make([]atomic.Bool, d.keys.Shards)}
		h.sweep.Store(d.nextShard.Load())
		h.sweepInline.Store(d.nextShard.Load())
		d.hintsPtr = h
	})
	return d.hintsPtr
}

// markShard tells the worker that this Dispatcher wrote a shard's schedule: its next scan reads it.
func (d *Dispatcher) markShard(shard int) { d.hints().dirty[shard].Store(true) }

// scanReady reads, in one round trip, the webhooks with deliveries due (up to limit per shard) in the
// shards that may have some (scanHints), plus a sweep (scanIdle, or scanHinted when the last sweep is
// idleWait old) or every shard (scanFull), and the inline attempts whose lease has ended in the inline
// zsets read. It returns those and the earliest due time in the future that it knows of.
func (d *Dispatcher) scanReady(ctx context.Context, now time.Time, limit int, mode scanMode) ([]dueWebhook, []stray, time.Time, error) {
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
	for s := range shards {
		if read[s] || h.next[s].Load() <= nowMs || h.dirty[s].Load() {
			h.dirty[s].Store(false) // before the read: a write marked after it is read next time
			heads[s] = pipe.ZRangeWithScores(ctx, d.keys.readyKey(s), 0, int64(limit))
		}
	}
	inline := make([]*redis.ZSliceCmd, len(inlines))
	for k, s := range inlines {
		inline[k] = pipe.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: d.keys.inlineKey(s), ByScore: true,
			Start: "-inf", Stop: strconv.FormatInt(nowMs, 10), Count: int64(limit)})
	}
	if pipe.Len() == 0 {
		return nil, nil, d.knownDue(nowMs), nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		d.reloadOnTransport(err)
		for s, c := range heads {
			if c != nil {
				h.dirty[s].Store(true) // not read: read it again
			}
		}
		return nil, nil, time.Time{}, fmt.Errorf("webhooks: read schedules: %w", err)
	}
	due, strays := d.readScan(nowMs, heads, inline, inlines)
	return due, strays, d.knownDue(nowMs), nil
}

// readScan reads a scan's replies: the due webhooks of the ready zsets read (heads, per shard; nil
// for a shard not read), whose earliest scores become the shards' hints, and the strays of the inline
// zsets read (inline, of the shards inlines).
func (d *Dispatcher) readScan(nowMs int64, heads, inline []*redis.ZSliceCmd, inlines []int) ([]dueWebhook, []stray) {
	h := d.hints()
	var due []dueWebhook
	for s, cmd := range heads {
		if cmd == nil {
			continue
		}
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
		h.next[s].Store(first)
	}
	var strays []stray
	for k, cmd := range inline {
		for _, z := range cmd.Val() {
			if m, _ := z.Member.(string); len(m) > ks.DeliveryIDLen {
				strays = append(strays, stray{shard: inlines[k], deliveryID: m[:ks.DeliveryIDLen], webhookID: m[ks.DeliveryIDLen:]})
			}
		}
	}
	return due, strays
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
	return msTime(next)
}
