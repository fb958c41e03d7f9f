package webhooks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// The schedule of inline attempts. A delivery that Dispatch claims for an attempt of its own is not put
// in its webhook's queue but in the shard's inline zset, {P:s}:inline (delivery id + webhook id -> the
// lease's end, ms): one ZADD in the claim and one ZREM in the outcome, where a queue entry would cost
// the claim a ZADD of the queue and of the ready zset and the outcome a ZREM, a ZRANGE and a ZADD or
// ZREM to retime the webhook. Should the attempt's outcome not be recorded (the process died, Redis
// failed), a worker's sweep finds the entry once its lease has ended and takes it into the webhook's
// queue (adoptScript), due at once, where the worker takes it as any other due delivery.

// adoptScript takes deliveries whose inline attempt's lease ended without an outcome from the shard's
// inline zset into their webhooks' queues, due at once (their score, the lease's end, is past), and
// lowers each webhook's ready score to it. An entry no longer there, or not yet due, is left alone.
// Every entry is checked before the first write.
//
// KEYS[1] -> {P:s}:ready
// KEYS[2] -> {P:s}:inline
// KEYS[2+i] (i = 1..n) -> entry i's webhook's queue
// ARGV[1] -> now (ms): entries scored later are left alone
// ARGV[2i], ARGV[2i+1] -> entry i's delivery id, webhook id (the entry is the two joined)
// returns how many entries it took
var adoptScript = redis.NewScript(`
local now, n = tonumber(ARGV[1]), #KEYS - 2
local due = {}
for i = 1, n do
  local score = redis.call('ZSCORE', KEYS[2], ARGV[2 * i] .. ARGV[2 * i + 1])
  if score and tonumber(score) <= now then due[i] = score end
end
local took = 0
for i = 1, n do
  if due[i] then
    redis.call('ZREM', KEYS[2], ARGV[2 * i] .. ARGV[2 * i + 1])
    redis.call('ZADD', KEYS[2 + i], due[i], ARGV[2 * i])
    redis.call('ZADD', KEYS[1], 'LT', due[i], ARGV[2 * i + 1])
    took = took + 1
  end
end
return took
`)

// requeueInline takes the inline entries of attempts this call leased but whose outcome it does not
// record (not attempted in time, or the caller's context ended) into their webhooks' queues at once,
// due at their lease's end as they were: a worker's hinted scan or sweep of the ready zsets finds them
// sooner than a sweep of the inline zsets would. Best effort: an entry left behind is found by the
// sweep.
func (d *Dispatcher) requeueInline(ctx context.Context, shard int, recs []*record) {
	keys := []string{d.keys.readyKey(shard), d.keys.inlineKey(shard)}
	args := []any{int64(math.MaxInt64)}
	for _, r := range recs {
		keys = append(keys, d.keys.queueKey(shard, r.WebhookID))
		args = append(args, r.ID, r.WebhookID)
	}
	if err := d.scripts.run(context.WithoutCancel(ctx), adoptScript, keys, args...).Err(); err != nil {
		d.log.Warn("webhooks: give back inline attempts", "shard", shard, "error", err)
	}
	d.markShard(shard)
}

// stray is an entry of a shard's inline zset whose lease has ended.
type stray struct {
	shard         int
	id, webhookID string // its delivery id, its webhook
}

// adopt takes stray inline deliveries into their webhooks' queues (adoptScript), one script per shard,
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
		keys := []string{d.keys.readyKey(shard), d.keys.inlineKey(shard)}
		args := []any{now.UnixMilli()}
		for _, s := range ss {
			keys = append(keys, d.keys.queueKey(shard, s.webhookID))
			args = append(args, s.id, s.webhookID)
		}
		go func() {
			n, err := d.scripts.run(ctx, adoptScript, keys, args...).Int64()
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
