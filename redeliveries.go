package webhooks

// A delivery's redeliveries, for its timeline in the admin API's GET /deliveries/{id}: read from the
// webhook's index of deliveries, where Redeliver (and Recover through it) appends an entry at the
// moment it resets a failed delivery (claim.go's index). Nothing is stored for it: the record keeps no
// list of its redeliveries, so that one costs no memory per delivery.
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
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks/internal/index"
	"github.com/smartdrop/webhooks/internal/rdb"
)

// redeliveryScan bounds the index entries read per window.
const redeliveryScan = 64

// redeliveries returns when a delivery was redelivered, oldest first, as far as its index shows
// (above).
func (d *Dispatcher) redeliveries(ctx context.Context, dl *Delivery) ([]time.Time, error) {
	shard, err := d.keys.DeliveryShard(dl.ID)
	if err != nil {
		return nil, fmt.Errorf("%w: delivery %q", ErrNotFound, dl.ID)
	}
	created := rdb.UnixMilli(dl.CreatedAt)
	type window struct{ lo, hi int64 } // ms, both inclusive
	var windows []window
	lo := created + 1 // the creation's own entry is not a redelivery
	for _, a := range dl.History {
		windows = append(windows, window{lo, rdb.UnixMilli(a.At)})
		lo = max(lo, rdb.UnixMilli(a.At.Add(a.Duration)))
	}
	windows = append(windows, window{lo, d.now().UnixMilli()})
	key, hash := d.keys.Index(shard, dl.WebhookID), rdb.IndexedHash(dl.ID)
	pipe := d.rdb.Pipeline()
	reads := make([]*redis.XMessageSliceCmd, 0, len(windows))
	for _, w := range windows {
		if w.hi >= w.lo {
			reads = append(reads, pipe.XRevRangeN(ctx, key, strconv.FormatInt(w.hi, 10), strconv.FormatInt(w.lo, 10), redeliveryScan))
		}
	}
	if len(reads) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("webhooks: read the redeliveries of %s: %w", dl.ID, err)
	}
	var out []time.Time
	seen := map[int64]bool{}
	for _, cmd := range reads { // windows oldest first; each read newest first
		msgs := cmd.Val()
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
