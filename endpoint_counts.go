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
	"github.com/smartdrop/webhooks/internal/types"
	"github.com/smartdrop/webhooks/internal/worker"
	"time"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/index"
	"github.com/smartdrop/webhooks/internal/rdb"
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
	var parkedUntil time.Time // zero: the circuit is closed, nothing is parked
	if h.State != CircuitClosed {
		parkedUntil = types.Later(h.OpenUntil, now).Add(worker.ProbeRecheck)
	}
	batch := 2*countsRecent/d.keys.Shards + 2 // per shard: the newest countsRecent, when spread evenly
	qs, err := rdb.ReadWebhookQueues(ctx, d.rdb, d.keys, webhookID, parkedUntil, batch)
	if err != nil {
		return out, err
	}
	out.Pending, out.Parked = qs.Pending, qs.Parked
	// The newest entries, as far as the reads are known to hold every shard's (index.Newest).
	take := index.Newest(qs.Index, batch, countsRecent)
	recs, err := rdb.ReadIndexedRecords(ctx, d.rdb, d.keys, webhookID, take, time.Now())
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
