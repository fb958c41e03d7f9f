package webhooks

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/worker"
)

// The schedule has two levels per shard, so that leasing is fair across webhooks. A single zset of
// due deliveries per shard, ordered by time, cannot be: a webhook with ten thousand due deliveries
// at its head (its circuit open, at its in-flight cap or rate limit) would hide every other webhook's
// due deliveries behind them. Instead:
//
//	{P:s}:ready        zset  webhook id -> at most when its earliest delivery in the shard is due (ms),
//	                         or later while the webhook is parked (circuit open, rate limit)
//	{P:s}:q:<webhook>  zset  delivery id -> next attempt, or lease end while leased (ms)
//
// A ready score is a lower bound, not a copy: a write that makes a delivery due lowers it (ZADD LT),
// while one that takes a delivery out of the due (a lease, a final outcome) leaves it as it is, so
// that the hot paths pay no read of the queue's head. A worker reads the ready zsets (the webhooks
// that may have something due), chooses how many deliveries to take of each webhook (its fair share
// of the free slots, within its in-flight cap, rate limit and circuit), reads that many due ids of
// each chosen queue, and leases them; when it reads a queue to its last due entry, or finds none, the
// lease sets the webhook's ready score to the queue's head (retime) in the same step, so a score that
// says due when nothing is costs one read, once. A webhook it cannot take from for a while (open
// circuit, rate limit) it parks: its ready score moves to when it can, one ZADD XX GT, so it no longer
// sits among the due; a later write that makes a delivery due undoes a park, and the next worker to
// see the webhook parks it again. The invariant every write keeps: a webhook with a delivery in a
// shard's queue has a ready score there, at most that delivery's score unless the webhook is parked.
//
// Dispatcher.Stats (stats.go) reads this schedule without writing it, at a cost bounded whatever the
// backlog: the head of each ready zset (StatsWebhooksPerShard webhooks), then per shard one script over
// those webhooks' queues (ZCARD, ZCOUNT, head), then per shard one script over the lease byte of at
// most StatsLeasesPerShard records whose queue score lies within one lease from now — a leased
// delivery's score is its lease end, so only there can an attempt be in flight. Three pipelined round
// trips in all; nothing is maintained for it on the write paths.

const (
	// probeRecheck is how long a worker parks a webhook whose probe another replica holds.
	probeRecheck = time.Second
	// rateHorizon is how far ahead an attempt to a rate-limited webhook takes its slot (then waits
	// for it), and how far ahead a worker counts free slots when it decides how many to lease.
	rateHorizon = 100 * time.Millisecond
)

// park moves a webhook's ready score, in every shard it was found due in (due, all of one webhook), to
// until if that is later: nothing of the webhook is taken there before then (a retime may undo it; the
// next worker to see the webhook parks it again), and holds the local hint's ids of it until then. One
// round trip (rdb.Park).
func (d *Dispatcher) park(ctx context.Context, due []worker.Due, until time.Time) {
	if len(due) == 0 {
		return
	}
	shards := make([]int, len(due))
	for i, w := range due {
		shards[i] = w.Shard
		d.local.Delay(w.Shard, w.ID, until.UnixMilli()) // the local hint's ids of it wait as long
	}
	if err := rdb.Park(ctx, d.rdb, d.keys, due[0].ID, shards, until); err != nil {
		d.log.Warn("webhooks: park webhook", "webhook_id", due[0].ID, "error", err)
	}
}
