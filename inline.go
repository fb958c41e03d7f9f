package webhooks

import (
	"context"
	"math"

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
	entries := make([]rdb.EndedInline, len(recs))
	for i, r := range recs {
		entries[i] = rdb.EndedInline{Shard: shard, ID: r.ID, WebhookID: r.WebhookID}
	}
	run := rdb.AdoptRun(d.keys, shard, math.MaxInt64, entries)
	if err := d.scripts.Run(context.WithoutCancel(ctx), run.Script, run.Keys, run.Args...).Err(); err != nil {
		d.log.Warn("webhooks: give back inline attempts", "shard", shard, "error", err)
	}
	d.leaser.MarkShard(shard)
}
