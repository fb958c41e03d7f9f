package webhooks

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
// lease's end, ms): one ZADD in the claim and one ZREM in the outcome, where a queue entry would cost
// the claim a ZADD of the queue and of the ready zset and the outcome a ZREM, a ZRANGE and a ZADD or
// ZREM to retime the webhook. Should the attempt's outcome not be recorded (the process died, Redis
// failed), a worker's sweep finds the entry once its lease has ended and takes it into the webhook's
// queue (rdb.Adopt), due at once, where the worker takes it as any other due delivery.

// requeueInline takes the inline entries of attempts this call leased but whose outcome it does not
// record (not attempted in time, or the caller's context ended) into their webhooks' queues at once,
// due at their lease's end as they were: a worker's hinted scan or sweep of the ready zsets finds them
// sooner than a sweep of the inline zsets would. Best effort: an entry left behind is found by the
// sweep.
func (d *Dispatcher) requeueInline(ctx context.Context, shard int, recs []*rdb.Record) {
	keys := []string{d.keys.Ready(shard), d.keys.Inline(shard)}
	args := []any{int64(math.MaxInt64)}
	for _, r := range recs {
		keys = append(keys, d.keys.Queue(shard, r.WebhookID))
		args = append(args, r.ID, r.WebhookID)
	}
	if err := d.scripts.Run(context.WithoutCancel(ctx), rdb.Adopt, keys, args...).Err(); err != nil {
		d.log.Warn("webhooks: give back inline attempts", "shard", shard, "error", err)
	}
	d.markShard(shard)
}

// stray is an entry of a shard's inline zset whose lease has ended.
type stray struct {
	shard         int
	id, webhookID string // its delivery id, its webhook
}

// adopt takes stray inline deliveries into their webhooks' queues (rdb.Adopt), one script per shard,
// the shards' scripts together. It returns how many it took.
func (d *Dispatcher) adopt(ctx context.Context, now time.Time, strays []stray) (int, error) {
	byShard := map[int][]stray{}
	for _, s := range strays {
		byShard[s.shard] = append(byShard[s.shard], s)
	}
	type result struct {
		n   int64
		err error
	}
	results := make(chan result, len(byShard))
	for shard, ss := range byShard {
		keys := []string{d.keys.Ready(shard), d.keys.Inline(shard)}
		args := []any{now.UnixMilli()}
		for _, s := range ss {
			keys = append(keys, d.keys.Queue(shard, s.webhookID))
			args = append(args, s.id, s.webhookID)
		}
		go func() {
			n, err := d.scripts.Run(ctx, rdb.Adopt, keys, args...).Int64()
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
