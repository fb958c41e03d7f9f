package webhooks

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks/internal/rdb"
)

// Bounds of DeliveryRepo.Page.
const (
	// DefaultPageLimit is the page size when DeliveryQuery.Limit is 0.
	DefaultPageLimit = 50
	// MaxPageLimit is the largest page; a larger DeliveryQuery.Limit is lowered to it.
	MaxPageLimit = 500
	// maxPageRounds bounds the index reads of one Page call; a filtered page that has not found Limit
	// matches by then ends early with a cursor where it stopped.
	maxPageRounds = 20
	// minFilteredBatch is the fewest index entries a filtered page examines per round.
	minFilteredBatch = 100
	// maxCursorID bounds the id inside a cursor.
	maxCursorID = 256
	// cursorVersion is the first byte of every cursor.
	cursorVersion = 2
)

// DeliveryQuery selects a page of one webhook's deliveries.
type DeliveryQuery struct {
	// Status keeps only deliveries in that state; "" keeps all.
	Status Status
	// Limit is the most deliveries a page holds: 0 means DefaultPageLimit, more than MaxPageLimit means
	// MaxPageLimit.
	Limit int
	// Cursor continues a listing where the page that returned it as NextCursor ended; "" starts at the
	// newest delivery.
	Cursor string
}

// DeliveryPage is one page of a webhook's deliveries, newest first. NextCursor is "" on the last page.
type DeliveryPage struct {
	Deliveries []*Delivery `json:"deliveries"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// pagePos is a position in a webhook's listing: an index entry's stream id (ms, seq) and delivery id.
// The listing orders by ms, then seq, then delivery id, all descending: within one shard that is the
// stream's own order (XREVRANGE), and shards merge by it.
type pagePos struct {
	ms, seq int64
	id      string
}

// before reports whether p comes before q in the listing.
func (p pagePos) before(q pagePos) bool {
	switch {
	case p.ms != q.ms:
		return p.ms > q.ms
	case p.seq != q.seq:
		return p.seq > q.seq
	}
	return p.id > q.id
}

// streamID is p's position in one shard's index: XREVRANGE from it (inclusive) reads p's entry, if the
// shard holds it, and what follows.
func (p pagePos) streamID() string {
	return strconv.FormatInt(p.ms, 10) + "-" + strconv.FormatInt(p.seq, 10)
}

func (p pagePos) cursor() string {
	b := make([]byte, 0, 17+len(p.id))
	b = append(b, cursorVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(p.ms))
	b = binary.BigEndian.AppendUint64(b, uint64(p.seq))
	b = append(b, p.id...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor made by pagePos.cursor.
func decodeCursor(c string) (pagePos, error) {
	if len(c) > base64.RawURLEncoding.EncodedLen(17+maxCursorID) {
		return pagePos{}, fmt.Errorf("%w: too long", ErrInvalidCursor)
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(c)
	if err != nil {
		return pagePos{}, fmt.Errorf("%w: %w", ErrInvalidCursor, err)
	}
	if len(b) < 17 || b[0] != cursorVersion { // an empty id marks the place of an entry of another shape
		return pagePos{}, fmt.Errorf("%w: unknown format", ErrInvalidCursor)
	}
	p := pagePos{ms: int64(binary.BigEndian.Uint64(b[1:9])), seq: int64(binary.BigEndian.Uint64(b[9:17])), id: string(b[17:])}
	if p.ms < 0 || p.seq < 0 || !utf8.ValidString(p.id) {
		return pagePos{}, fmt.Errorf("%w: unknown format", ErrInvalidCursor)
	}
	if p.cursor() != c { // the decoder skips line breaks: accept only the one spelling we issue
		return pagePos{}, fmt.Errorf("%w: not canonical", ErrInvalidCursor)
	}
	return p, nil
}

// parseStreamID reads a stream entry id, <ms>-<seq>.
func parseStreamID(id string) (ms, seq int64, ok bool) {
	a, b, found := strings.Cut(id, "-")
	ms, err1 := strconv.ParseInt(a, 10, 64)
	seq, err2 := strconv.ParseInt(b, 10, 64)
	return ms, seq, found && err1 == nil && err2 == nil
}

// normalize checks q and returns the page size and how many index entries to read per shard and round.
func (q DeliveryQuery) normalize() (limit, batch int, err error) {
	switch q.Status {
	case "", StatusPending, StatusSuccess, StatusFailed:
	default:
		return 0, 0, fmt.Errorf("%w: unknown status %q", ErrInvalidQuery, q.Status)
	}
	switch {
	case q.Limit < 0:
		return 0, 0, fmt.Errorf("%w: negative limit %d", ErrInvalidQuery, q.Limit)
	case q.Limit == 0:
		limit = DefaultPageLimit
	default:
		limit = min(q.Limit, MaxPageLimit)
	}
	batch = limit + 1 // one more than a page: tells whether another page follows
	if q.Status != "" {
		batch = max(batch, minFilteredBatch)
	}
	return limit, batch, nil
}

// pageEntry is an index entry read for a page.
type pageEntry struct {
	pagePos
	shard  int
	expiry int64 // of the record when indexed (ms)
}

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
	limit, batch, err := q.normalize()
	if err != nil {
		return nil, err
	}
	pos, err := q.start()
	if err != nil {
		return nil, err
	}
	if err := loadKeys(ctx, r.keys, r.rdb); err != nil {
		return nil, err
	}
	page := &DeliveryPage{Deliveries: make([]*Delivery, 0, min(limit, 64))}
	for round := range maxPageRounds {
		from := "+"
		if pos != nil {
			from = pos.streamID()
		}
		reads, err := rdb.ReadIndexes(ctx, r.rdb, r.keys, webhookID, from, batch, round == 0)
		if err != nil {
			return nil, err
		}
		valid, frontier := mergeIndexes(reads, pos, batch)
		ready := readyEntries(valid, frontier)
		if ready == 0 {
			if frontier == nil {
				return page, nil // nothing left: the last page
			}
			pos = frontier // the full reads held only entries of another shape: step over them
			continue
		}
		take := valid[:min(ready, batch)]
		more := frontier != nil || len(valid) > len(take)
		full, err := r.fillPage(ctx, webhookID, page, take, q.Status, limit, more)
		if err != nil {
			return nil, err
		}
		if full || !more {
			return page, nil
		}
		p := take[len(take)-1].pagePos
		pos = &p
	}
	// The bound ended the page early: continue after the last entry examined.
	if pos != nil {
		page.NextCursor = pos.cursor()
	}
	return page, nil
}

// start returns the position q.Cursor continues after, or nil (the top of the listing) when it is "".
func (q DeliveryQuery) start() (*pagePos, error) {
	if q.Cursor == "" {
		return nil, nil
	}
	p, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// mergeIndexes merges one round of shard reads (reads[s] from shard s) into the entries after pos, in
// listing order, and returns with them the frontier: a shard whose read was full may hold more entries
// after its last one, so only entries up to the highest such last entry are known to be the next ones
// of the listing. frontier is nil when no read was full. A read from pos holds at most one entry at or
// before pos (a shard's stream ids are unique), and batch is at least 2, so every full read moves the
// listing on.
func mergeIndexes(reads [][]redis.XMessage, pos *pagePos, batch int) (valid []pageEntry, frontier *pagePos) {
	for s, msgs := range reads {
		for _, m := range msgs {
			e, ok := indexEntry(s, m)
			if ok && (pos == nil || pos.before(e.pagePos)) {
				valid = append(valid, e)
			}
		}
		if len(msgs) < batch {
			continue // the shard has nothing more in range
		}
		if last, ok := lastPos(s, msgs[len(msgs)-1]); ok && (frontier == nil || last.before(*frontier)) {
			frontier = &last
		}
	}
	slices.SortFunc(valid, func(a, b pageEntry) int {
		if a.before(b.pagePos) {
			return -1
		}
		if b.before(a.pagePos) {
			return 1
		}
		return 0
	})
	return valid, frontier
}

// lastPos is the position of m, the last entry of a full read of a shard. An entry of another shape
// still holds its place, so its stream id alone (with the lowest delivery id) marks it; one whose id
// is not a stream id has none.
func lastPos(shard int, m redis.XMessage) (pagePos, bool) {
	ms, seq, ok := parseStreamID(m.ID)
	if !ok {
		return pagePos{}, false
	}
	if e, ok := indexEntry(shard, m); ok {
		return e.pagePos, true
	}
	return pagePos{ms: ms, seq: seq}, true
}

// readyEntries counts the leading entries of valid (in listing order) that are known to be the next
// ones of the listing: those not after frontier, or all of them when frontier is nil.
func readyEntries(valid []pageEntry, frontier *pagePos) int {
	if frontier == nil {
		return len(valid)
	}
	ready := 0
	for ready < len(valid) && !frontier.before(valid[ready].pagePos) {
		ready++
	}
	return ready
}

// fillPage reads the records of take and appends to page those that still exist and, with status set,
// are in that state, until page holds limit deliveries. It reports whether the page is full; a full page
// gets a NextCursor after its last delivery when take holds entries after it or more is set (the listing
// goes on past take).
func (r *DeliveryRepo) fillPage(ctx context.Context, webhookID string, page *DeliveryPage, take []pageEntry, status Status, limit int, more bool) (bool, error) {
	recs, err := r.fetchPage(ctx, webhookID, take)
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

// indexEntry decodes an index entry of a shard; an entry that is not one of ours is skipped.
func indexEntry(shard int, m redis.XMessage) (pageEntry, bool) {
	ms, seq, ok := parseStreamID(m.ID)
	hash, _ := m.Values["d"].(string)
	x, _ := m.Values["x"].(string)
	expiry, err := strconv.ParseInt(x, 10, 64)
	if !ok || len(hash) != 12 || err != nil {
		return pageEntry{}, false
	}
	return pageEntry{pagePos: pagePos{ms: ms, seq: seq, id: rdb.IndexedID(shard, hash)}, shard: shard, expiry: expiry}, true
}

// fetchPage reads the records of index entries in one round trip (rdb.ReadIndexedRecords).
func (r *DeliveryRepo) fetchPage(ctx context.Context, webhookID string, entries []pageEntry) ([]*rdb.Record, error) {
	refs := make([]rdb.IndexedRecord, len(entries))
	for i, e := range entries {
		refs[i] = rdb.IndexedRecord{Shard: e.shard, ID: e.id, Expiry: e.expiry}
	}
	return rdb.ReadIndexedRecords(ctx, r.rdb, r.keys, webhookID, refs, time.Now())
}
