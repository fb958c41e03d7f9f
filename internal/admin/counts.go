package admin

// An endpoint's delivery counts, for the admin API's GET /webhooks/{id}/counts (the UI's endpoint
// list and page): how many of its deliveries are pending, how many of those are parked behind its
// open circuit, and how many of its newest deliveries failed. Read like Stats, from what the write
// paths keep anyway (the webhook's queue in each shard, its index of deliveries), at a cost bounded
// whatever the backlog: three round trips of at most 2 × Shards + 1 commands and CountsRecent record
// reads. Nothing is maintained for it. The answer also says whether the endpoint page's Replay can
// work (Options.ReplayIndex), so that the page offers it only then.

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/index"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// CountsRecent is how many of a webhook's newest deliveries GET /webhooks/{id}/counts reads to count
// the failed ones, at most.
const CountsRecent = 100

// counts reads a webhook's delivery counts: its circuit, then in one round trip every shard's
// queue (ZCARD, and ZCOUNT up to the probe's time while the circuit is open) and newest index entries,
// then the records of the newest CountsRecent of them, and whether those in the waiting form are
// queued (rdb.Queued).
func (b *Backend) counts(ctx context.Context, webhookID string) (api.Counts, error) {
	out := api.Counts{ReplayAvailable: b.ReplayIndex}
	if err := b.LoadKeys(ctx); err != nil {
		return out, err
	}
	now := b.Now()
	hs, err := b.Breaker.Read(ctx, now, webhookID)
	if err != nil {
		return out, err
	}
	h := hs[webhookID]
	var parkedUntil time.Time // zero: the circuit is closed, nothing is parked
	if h.State != types.CircuitClosed {
		parkedUntil = types.Later(h.OpenUntil, now).Add(breaker.ProbeRecheck)
	}
	batch := 2*CountsRecent/b.Keys.Shards + 2 // per shard: the newest CountsRecent, when spread evenly
	qs, err := rdb.ReadWebhookQueues(ctx, b.Client, b.Keys, webhookID, parkedUntil, batch)
	if err != nil {
		return out, err
	}
	out.Pending, out.Parked = qs.Pending, qs.Parked
	// The newest entries, as far as the reads are known to hold every shard's (index.Newest).
	take := index.Newest(qs.Index, batch, CountsRecent)
	recs, err := rdb.ReadIndexedRecords(ctx, b.Client, b.Keys, webhookID, take, time.Now())
	if err != nil {
		return out, err
	}
	var waiting []rdb.IndexedRecord // in the waiting form: behind their key's head, or just promoted
	for i, rec := range recs {
		if rec == nil {
			continue // expired, gone, or an entry a later Redeliver replaced
		}
		out.Examined++
		if rec.Status == types.StatusFailed {
			out.Failed++
		}
		if rec.IsWaiting() {
			waiting = append(waiting, take[i])
		}
	}
	// A delivery promoted to the head of its key is queued before its record leaves the waiting form:
	// it is counted in Pending, not here.
	queued, err := rdb.Queued(ctx, b.Client, b.Keys, webhookID, waiting)
	if err != nil {
		return out, err
	}
	for _, q := range queued {
		if !q {
			out.Waiting++
		}
	}
	return out, nil
}
