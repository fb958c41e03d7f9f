package webhooks

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
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
	// maxTieFetch bounds one shard's read while it skips entries that share the cursor's score.
	maxTieFetch = 10_000
	// maxCursorID bounds the id inside a cursor.
	maxCursorID = 256
	// cursorVersion is the first byte of every cursor.
	cursorVersion = 1
)

// ErrInvalidQuery is returned (wrapped) by DeliveryRepo.Page and Dispatcher.Recover for arguments that
// cannot be used: an unknown status, a negative limit, an empty time window, a malformed cursor.
var ErrInvalidQuery = errors.New("webhooks: invalid query")

// ErrInvalidCursor is returned (wrapped) by DeliveryRepo.Page for a cursor it did not issue. It wraps
// ErrInvalidQuery.
var ErrInvalidCursor = fmt.Errorf("%w: invalid cursor", ErrInvalidQuery)

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

// pagePos is a position in a webhook's listing: index score (record expiry, ms) and delivery id. The
// listing orders by score descending, then id descending (the order ZRANGE ... REV gives one shard).
type pagePos struct {
	score float64
	id    string
}

// before reports whether p comes before q in the listing.
func (p pagePos) before(q pagePos) bool {
	if p.score != q.score {
		return p.score > q.score
	}
	return p.id > q.id
}

func (p pagePos) cursor() string {
	b := make([]byte, 0, 9+len(p.id))
	b = append(b, cursorVersion)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(p.score))
	b = append(b, p.id...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor made by pagePos.cursor.
func decodeCursor(c string) (pagePos, error) {
	if len(c) > base64.RawURLEncoding.EncodedLen(9+maxCursorID) {
		return pagePos{}, fmt.Errorf("%w: too long", ErrInvalidCursor)
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(c)
	if err != nil {
		return pagePos{}, fmt.Errorf("%w: %w", ErrInvalidCursor, err)
	}
	if len(b) < 10 || b[0] != cursorVersion {
		return pagePos{}, fmt.Errorf("%w: unknown format", ErrInvalidCursor)
	}
	p := pagePos{score: math.Float64frombits(binary.BigEndian.Uint64(b[1:9])), id: string(b[9:])}
	if math.IsNaN(p.score) || math.IsInf(p.score, 0) || !utf8.ValidString(p.id) {
		return pagePos{}, fmt.Errorf("%w: unknown format", ErrInvalidCursor)
	}
	if p.cursor() != c { // the decoder skips line breaks: accept only the one spelling we issue
		return pagePos{}, fmt.Errorf("%w: not canonical", ErrInvalidCursor)
	}
	return p, nil
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
	shard int
}

// Page returns a page of a webhook's retained deliveries, newest first: ordered by index score (the
// record's expiry, so by creation or last Redeliver) descending, then by id descending. It merges the
// webhook's per-shard indexes, skips entries that have expired or whose record is gone, and with
// q.Status set keeps only deliveries in that state, reading further into the index until it has
// q.Limit of them; it reads at most a bounded number of batches per call, and when that bound ends a
// page early the page is shorter (possibly empty) and NextCursor continues after the last entry
// examined. Keep calling with NextCursor until it is "".
//
// The cursor is opaque and marks an exclusive position, so a listing never repeats a delivery and
// never skips one that was indexed before it started, even while deliveries are being written: a new
// delivery ranks above every existing one and appears only in a fresh listing. The one exception is
// Redeliver, which re-indexes a delivery at its new expiry: a delivery redelivered during a listing
// moves above the cursor, so the listing does not meet it further down, and it shows at the top of a
// fresh listing instead.
//
// An unknown webhook gives an error wrapping ErrNotFound, a bad query one wrapping ErrInvalidQuery (a
// bad cursor: ErrInvalidCursor).
func (r *DeliveryRepo) Page(ctx context.Context, webhookID string, q DeliveryQuery) (*DeliveryPage, error) {
	limit, batch, err := q.normalize()
	if err != nil {
		return nil, err
	}
	var pos *pagePos // nil: the top of the listing
	if q.Cursor != "" {
		p, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, err
		}
		pos = &p
	}
	minScore := "(" + strconv.FormatInt(time.Now().UnixMilli(), 10)
	page := &DeliveryPage{Deliveries: make([]*Delivery, 0, min(limit, 64))}

	// offsets and counts of each shard's next read. They grow only while a shard's whole read consists
	// of entries at or before pos that share its score (ties the cursor already passed), and reset when
	// pos moves.
	var offsets, counts [shardCount]int64
	reset := func() {
		for s := range shardCount {
			offsets[s], counts[s] = 0, int64(batch)
		}
	}
	reset()
	for round := range maxPageRounds {
		maxScore := "+inf"
		if pos != nil {
			maxScore = strconv.FormatFloat(pos.score, 'f', -1, 64)
		}
		pipe := r.rdb.Pipeline()
		var exists *redis.BoolCmd
		if round == 0 {
			exists = pipe.HExists(ctx, r.keys.webhooksKey(), webhookID)
		}
		ranges := make([]*redis.ZSliceCmd, shardCount)
		for s := range shardCount {
			ranges[s] = pipe.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{
				Key: r.keys.indexKey(s, webhookID), Start: maxScore, Stop: minScore,
				ByScore: true, Rev: true, Offset: offsets[s], Count: counts[s],
			})
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("webhooks: page deliveries of %s: %w", webhookID, err)
		}
		if exists != nil && !exists.Val() {
			return nil, fmt.Errorf("%w: webhook %q", ErrNotFound, webhookID)
		}

		// Merge. A shard whose read was full may hold more entries after its last one, so only entries
		// up to the highest such last entry (the frontier) are known to be the next ones of the listing.
		var valid []pageEntry
		var frontier *pagePos
		var blocked []int // full shards whose read held nothing after pos
		for s, cmd := range ranges {
			zs := cmd.Val()
			n := 0
			for _, z := range zs {
				id, _ := z.Member.(string)
				e := pageEntry{pagePos{z.Score, id}, s}
				if pos == nil || pos.before(e.pagePos) {
					valid = append(valid, e)
					n++
				}
			}
			if int64(len(zs)) < counts[s] {
				continue // the shard has nothing more in range
			}
			last := pagePos{zs[len(zs)-1].Score, ""}
			last.id, _ = zs[len(zs)-1].Member.(string)
			if frontier == nil || last.before(*frontier) {
				frontier = &last
			}
			if n == 0 {
				blocked = append(blocked, s)
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
		ready := len(valid)
		if frontier != nil {
			ready = 0
			for ready < len(valid) && !frontier.before(valid[ready].pagePos) {
				ready++
			}
		}
		if ready == 0 {
			if len(blocked) == 0 {
				return page, nil // nothing left: the last page
			}
			for _, s := range blocked {
				offsets[s] += counts[s]
				counts[s] = min(2*counts[s], maxTieFetch)
			}
			continue
		}
		take := valid[:min(ready, batch)]
		more := frontier != nil || len(valid) > len(take)

		recs, err := r.fetchPage(ctx, webhookID, take)
		if err != nil {
			return nil, err
		}
		for i, rec := range recs {
			if rec == nil || q.Status != "" && rec.Status != q.Status {
				continue
			}
			page.Deliveries = append(page.Deliveries, &rec.Delivery)
			if len(page.Deliveries) == limit {
				if i < len(take)-1 || more {
					page.NextCursor = take[i].cursor()
				}
				return page, nil
			}
		}
		if !more {
			return page, nil
		}
		p := take[len(take)-1].pagePos
		pos = &p
		reset()
	}
	// The bound ended the page early: continue after the last entry examined (or, when every round
	// only skipped entries the cursor had passed, from the same place).
	if pos != nil {
		page.NextCursor = pos.cursor()
	}
	return page, nil
}

// fetchPage reads the records of index entries in one round trip; an entry whose record is gone,
// cannot be decoded or belongs to another webhook maps to nil.
func (r *DeliveryRepo) fetchPage(ctx context.Context, webhookID string, entries []pageEntry) ([]*record, error) {
	pipe := r.rdb.Pipeline()
	gets := make([]*redis.StringCmd, len(entries))
	for i, e := range entries {
		gets[i] = pipe.Get(ctx, r.keys.deliveryKey(e.shard, e.id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("webhooks: page deliveries of %s: %w", webhookID, err)
	}
	out := make([]*record, len(entries))
	for i, e := range entries {
		raw, err := gets[i].Result()
		if err != nil {
			continue // gone (redis.Nil), or not a record
		}
		if rec, err := parseRecord(e.id, raw); err == nil && rec.WebhookID == webhookID {
			out[i] = rec
		}
	}
	return out, nil
}
