package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// The schedule of inline attempts. A delivery that Dispatch claims for an attempt of its own is not put
// in its webhook's queue but in the shard's inline zset, {P:s}:inline (delivery id + webhook id -> the
// lease's end, ms): one ZADD in the claim (and a read of the zset's head, for its wake) and one ZREM in
// the outcome, where a queue entry would cost
// the claim a ZADD of the queue and of the ready zset and the outcome a ZREM, a ZRANGE and a ZADD or
// ZREM to retime the webhook. A claim whose entry becomes the inline zset's head wakes the workers with
// its lease's end (lib/wake.lua), so each knows when the earliest inline lease of the shard ends. Should
// the attempt's outcome not be recorded (the process died, Redis failed), a worker reads the inline
// zset when the lease ends, finds the entry and takes it into the webhook's queue (adopt, rdb.Adopt),
// due at once, where the worker takes it as any other due delivery.

// RequeueInline takes the inline entries of attempts a call leased but whose outcome it does not
// record (not attempted in time, or the caller's context ended) into their webhooks' queues at once,
// due at their lease's end as they were (the workers are woken for that time: rdb.Adopt). Best effort:
// an entry left behind is found when its lease ends. It is a RequeueFunc.
func (l *Leaser) RequeueInline(ctx context.Context, shard int, recs []*rdb.Record) {
	entries := make([]rdb.EndedInline, len(recs))
	for i, r := range recs {
		entries[i] = rdb.EndedInline{Shard: shard, ID: r.ID, WebhookID: r.WebhookID}
	}
	run := rdb.AdoptRun(l.cfg.Keys, shard, math.MaxInt64, entries)
	if err := l.cfg.Scripts.Run(context.WithoutCancel(ctx), run.Script, run.Keys, run.Args...).Err(); err != nil {
		l.cfg.Log.Warn("webhooks: give back inline attempts", "shard", shard, "error", err)
	}
	l.MarkShard(shard)
}

// adopt takes stray inline deliveries (whose lease ended with no outcome recorded) into their webhooks'
// queues (rdb.Adopt), one script per shard, the shards' scripts together. It returns how many it took.
func (l *Leaser) adopt(ctx context.Context, now time.Time, strays []rdb.EndedInline) (int, error) {
	byShard := map[int][]rdb.EndedInline{}
	for _, s := range strays {
		byShard[s.Shard] = append(byShard[s.Shard], s)
	}
	type result struct {
		n   int64
		err error
	}
	results := make(chan result, len(byShard))
	for shard, ss := range byShard {
		run := rdb.AdoptRun(l.cfg.Keys, shard, now.UnixMilli(), ss)
		go func() {
			n, err := l.cfg.Scripts.Run(ctx, run.Script, run.Keys, run.Args...).Int64()
			results <- result{n, err}
		}()
	}
	took, errs := 0, []error(nil)
	for range byShard {
		r := <-results
		took += int(r.n)
		if r.err != nil {
			errs = append(errs, fmt.Errorf("webhooks: take over inline attempts: %w", r.err))
		}
	}
	return took, errors.Join(errs...)
}
