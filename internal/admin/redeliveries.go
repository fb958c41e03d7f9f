package admin

// A delivery's redeliveries, for its timeline in the admin API's GET /deliveries/{id}: read from the
// webhook's index of deliveries, where Redeliver (and Recover through it) appends an entry at the
// moment it resets a failed delivery (the claim's index). Nothing is stored for it: the record keeps
// no list of its redeliveries, so that one costs no memory per delivery.
//
// The index is the webhook's whole listing in the shard, so a delivery's entries are looked for only
// where a redelivery can be: between the end of one attempt in its history and the start of the next
// (a redelivery makes its attempt at once, or as soon as the worker or the circuit lets it), and after
// its last attempt. Each window is read from its end, at most redeliveryScan entries, all windows in one
// round trip. A redelivery whose attempt came more than redeliveryScan entries of the webhook's other
// deliveries (in its shard) later, or that precedes the attempts the history still keeps (the last
// 10), is not found: the timeline shows what it finds, and says so.

import (
	"context"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/index"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// redeliveryScan bounds the index entries read per window.
const redeliveryScan = 64

// redeliveries returns when a delivery was redelivered, oldest first, as far as its index shows
// (above).
func (b *Backend) redeliveries(ctx context.Context, dl *types.Delivery) ([]time.Time, error) {
	shard, err := b.Keys.DeliveryShard(dl.ID)
	if err != nil {
		return nil, err
	}
	created := rdb.UnixMilli(dl.CreatedAt)
	var windows []rdb.IndexWindow
	from := created + 1 // the creation's own entry is not a redelivery
	for _, a := range dl.History {
		windows = append(windows, rdb.IndexWindow{From: from, To: rdb.UnixMilli(a.At)})
		from = max(from, rdb.UnixMilli(a.At.Add(a.Duration)))
	}
	windows = append(windows, rdb.IndexWindow{From: from, To: b.Now().UnixMilli()})
	reads, err := rdb.ReadIndexWindows(ctx, b.Client, b.Keys, shard, dl.WebhookID, windows, redeliveryScan)
	if err != nil {
		return nil, fmt.Errorf("webhooks: read the redeliveries of %s: %w", dl.ID, err)
	}
	hash := rdb.IndexedHash(dl.ID)
	var out []time.Time
	seen := map[int64]bool{}
	for _, msgs := range reads { // windows oldest first; each read newest first
		for j := len(msgs) - 1; j >= 0; j-- {
			ms, _, ok := index.ParseStreamID(msgs[j].ID)
			if h, _ := msgs[j].Values["d"].(string); ok && h == hash && ms > created && !seen[ms] {
				seen[ms] = true
				out = append(out, rdb.MilliTime(ms))
			}
		}
	}
	return out, nil
}
