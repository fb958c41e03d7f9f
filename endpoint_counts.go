package webhooks

// An endpoint's delivery counts, for the admin API's GET /webhooks/{id}/counts (the UI's endpoint
// list and page): how many of its deliveries are pending, how many of those are parked behind its
// open circuit, and how many of its newest deliveries failed. Read like Stats, from what the write
// paths keep anyway (the webhook's queue in each shard, its index of deliveries), at a cost bounded
// whatever the backlog: three round trips of at most 2 × Shards + 1 commands and countsRecent record
// reads. Nothing is maintained for it. The answer also says whether the endpoint page's Replay can
// work (Options.ReplayIndex), so that the page offers it only then.

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/api"
)

// countsRecent is how many of a webhook's newest deliveries GET /webhooks/{id}/counts reads to count
// the failed ones, at most.
const countsRecent = 100

// endpointCounts reads a webhook's delivery counts: its circuit, then in one round trip every shard's
// queue (ZCARD, and ZCOUNT up to the probe's time while the circuit is open) and newest index entries,
// then the records of the newest countsRecent of them.
func (d *Dispatcher) endpointCounts(ctx context.Context, webhookID string) (api.Counts, error) {
	out := api.Counts{ReplayAvailable: d.opts.ReplayIndex}
	if err := loadKeys(ctx, d.keys, d.rdb); err != nil {
		return out, err
	}
	now := d.now()
	hs, err := d.breaker.Read(ctx, now, webhookID)
	if err != nil {
		return out, err
	}
	h := hs[webhookID]
	open := h.State != CircuitClosed
	parkedUntil := strconv.FormatInt(later(h.OpenUntil, now).Add(probeRecheck).UnixMilli(), 10)
	batch := 2*countsRecent/d.keys.Shards + 2 // per shard: the newest countsRecent, when spread evenly
	pipe := d.rdb.Pipeline()
	cards, parked := make([]*redis.IntCmd, d.keys.Shards), make([]*redis.IntCmd, d.keys.Shards)
	reads := make([]*redis.XMessageSliceCmd, d.keys.Shards)
	for s := range d.keys.Shards {
		q := d.keys.Queue(s, webhookID)
		cards[s] = pipe.ZCard(ctx, q)
		if open {
			parked[s] = pipe.ZCount(ctx, q, "-inf", parkedUntil)
		}
		reads[s] = pipe.XRevRangeN(ctx, d.keys.Index(s, webhookID), "+", "-", int64(batch))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return out, fmt.Errorf("webhooks: count the deliveries of %s: %w", webhookID, err)
	}
	index := make([][]redis.XMessage, d.keys.Shards)
	for s := range d.keys.Shards {
		out.Pending += cards[s].Val()
		if open {
			out.Parked += parked[s].Val()
		}
		index[s] = reads[s].Val()
	}
	// The newest entries, as far as the reads are known to hold every shard's (mergeIndexes).
	valid, frontier := mergeIndexes(index, nil, batch)
	take := valid[:min(readyEntries(valid, frontier), countsRecent)]
	recs, err := d.deliveries.fetchPage(ctx, webhookID, take)
	if err != nil {
		return out, err
	}
	for _, rec := range recs {
		if rec == nil {
			continue // expired, gone, or an entry a later Redeliver replaced
		}
		out.Examined++
		if rec.Status == StatusFailed {
			out.Failed++
		}
	}
	return out, nil
}
