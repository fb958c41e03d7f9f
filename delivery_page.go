package webhooks

import (
	"context"

	"github.com/smartdrop/webhooks/internal/index"
	"github.com/smartdrop/webhooks/internal/types"
)

// Bounds of DeliveryRepo.Page (internal/index).
const (
	// DefaultPageLimit is the page size when DeliveryQuery.Limit is 0.
	DefaultPageLimit = index.DefaultPageLimit
	// MaxPageLimit is the largest page; a larger DeliveryQuery.Limit is lowered to it.
	MaxPageLimit = index.MaxPageLimit
)

type (
	// DeliveryQuery selects a page of one webhook's deliveries (internal/types).
	DeliveryQuery = types.DeliveryQuery
	// DeliveryPage is one page of a webhook's deliveries, newest first (internal/types).
	DeliveryPage = types.DeliveryPage
)

// Page returns a page of a webhook's retained deliveries, newest first: in the order they were
// indexed, at creation or at their last Redeliver (within one millisecond, by each shard's order of
// indexing, then by delivery id). It merges the webhook's per-shard indexes, skips entries that have expired, whose record is gone
// or that a later Redeliver replaced, and with q.Status set keeps only deliveries in that state, reading
// further into the index until it has q.Limit of them; it reads at most a bounded number of batches per
// call, and when that bound ends a page early the page is shorter (possibly empty) and NextCursor
// continues after the last entry examined. Keep calling with NextCursor until it is "".
//
// The cursor is opaque and marks an exclusive position, so a listing never repeats a delivery and
// never skips one that was indexed before it started, even while deliveries are being written. A
// delivery indexed during a listing normally ranks above the cursor and shows only in a fresh listing;
// one indexed within the cursor's millisecond, or by a replica whose clock is behind, may rank below it
// and show in the running listing too. The one exception is Redeliver, which re-indexes a delivery: a
// delivery redelivered during a listing moves above the cursor, so the listing does not meet it further
// down, and it shows at the top of a fresh listing instead.
//
// An unknown webhook gives an error wrapping ErrNotFound, a bad query one wrapping ErrInvalidQuery (a
// bad cursor: ErrInvalidCursor).
func (r *DeliveryRepo) Page(ctx context.Context, webhookID string, q DeliveryQuery) (*DeliveryPage, error) {
	return r.indexes().Page(ctx, webhookID, q)
}

// indexes reads r's indexes of deliveries (internal/index), loading the keys' layout as loadKeys does.
func (r *DeliveryRepo) indexes() *index.Reader {
	load := func(ctx context.Context) error { return loadKeys(ctx, r.keys, r.rdb) }
	return &index.Reader{Client: r.rdb, Keys: r.keys, Load: load}
}
