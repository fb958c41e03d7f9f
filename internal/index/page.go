package index

import (
	"context"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// Bounds of a page of one webhook's deliveries (Reader.Page).
const (
	// DefaultPageLimit is the page size when DeliveryQuery.Limit is 0.
	DefaultPageLimit = 50
	// MaxPageLimit is the largest page; a larger DeliveryQuery.Limit is lowered to it.
	MaxPageLimit = 500
	// MaxPageRounds bounds the index reads of one Page call; a filtered page that has not found Limit
	// matches by then ends early with a cursor where it stopped.
	MaxPageRounds = 20
	// MinFilteredBatch is the fewest index entries a filtered page examines per round.
	MinFilteredBatch = 100
)

// normalize checks q and returns the page size and how many index entries to read per shard and round.
func normalize(q types.DeliveryQuery) (limit, batch int, err error) {
	switch q.Status {
	case "", types.StatusPending, types.StatusSuccess, types.StatusFailed, types.StatusSkipped:
	default:
		return 0, 0, fmt.Errorf("%w: unknown status %q", types.ErrInvalidQuery, q.Status)
	}
	switch {
	case q.Limit < 0:
		return 0, 0, fmt.Errorf("%w: negative limit %d", types.ErrInvalidQuery, q.Limit)
	case q.Limit == 0:
		limit = DefaultPageLimit
	default:
		limit = min(q.Limit, MaxPageLimit)
	}
	batch = limit + 1 // one more than a page: tells whether another page follows
	if q.Status != "" {
		batch = max(batch, MinFilteredBatch)
	}
	return limit, batch, nil
}

// start returns the position q.Cursor continues after, or nil (the top of the listing) when it is "".
func start(q types.DeliveryQuery) (*Pos, error) {
	if q.Cursor == "" {
		return nil, nil
	}
	p, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// Page returns a page of webhookID's retained deliveries, newest first, as the root's DeliveryRepo.Page
// documents: it merges the webhook's per-shard indexes, skips entries that have expired, whose record
// is gone or that a later Redeliver replaced, and with q.Status set keeps only deliveries in that
// state, reading further into the index until it has q.Limit of them, in at most MaxPageRounds rounds
// of a round trip of index reads and one of record reads (the first round's index reads also check
// that the webhook is registered).
func (r *Reader) Page(ctx context.Context, webhookID string, q types.DeliveryQuery) (*types.DeliveryPage, error) {
	limit, batch, err := normalize(q)
	if err != nil {
		return nil, err
	}
	pos, err := start(q)
	if err != nil {
		return nil, err
	}
	if err := r.Load(ctx); err != nil {
		return nil, err
	}
	page := &types.DeliveryPage{Deliveries: make([]*types.Delivery, 0, min(limit, 64))}
	for round := range MaxPageRounds {
		from := "+"
		if pos != nil {
			from = pos.streamID()
		}
		reads, err := rdb.ReadIndexes(ctx, r.Client, r.Keys, webhookID, from, batch, round == 0)
		if err != nil {
			return nil, err
		}
		valid, frontier := merge(reads, pos, batch)
		n := ready(valid, frontier)
		if n == 0 {
			if frontier == nil {
				return page, nil // nothing left: the last page
			}
			pos = frontier // the full reads held only entries of another shape: step over them
			continue
		}
		take := valid[:min(n, batch)]
		more := frontier != nil || len(valid) > len(take)
		full, err := r.fillPage(ctx, webhookID, page, take, q.Status, limit, more)
		if err != nil {
			return nil, err
		}
		if full || !more {
			return page, nil
		}
		p := take[len(take)-1].Pos
		pos = &p
	}
	// The bound ended the page early: continue after the last entry examined.
	if pos != nil {
		page.NextCursor = pos.cursor()
	}
	return page, nil
}

// fillPage reads the records of take and appends to page those that still exist and, with status set,
// are in that state, until page holds limit deliveries. It reports whether the page is full; a full page
// gets a NextCursor after its last delivery when take holds entries after it or more is set (the listing
// goes on past take).
func (r *Reader) fillPage(ctx context.Context, webhookID string, page *types.DeliveryPage, take []Entry, status types.Status, limit int, more bool) (bool, error) {
	refs := make([]rdb.IndexedRecord, len(take))
	for i, e := range take {
		refs[i] = e.record()
	}
	recs, err := rdb.ReadIndexedRecords(ctx, r.Client, r.Keys, webhookID, refs, time.Now())
	if err != nil {
		return false, err
	}
	for i, rec := range recs {
		if rec == nil || status != "" && rec.Status != status {
			continue
		}
		page.Deliveries = append(page.Deliveries, &rec.Delivery)
		if len(page.Deliveries) == limit {
			if i < len(take)-1 || more {
				page.NextCursor = take[i].cursor()
			}
			return true, nil
		}
	}
	return false, nil
}
