package index

import (
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// Entry is an index entry: its place in the listing, its shard, and its record's expiry when indexed.
type Entry struct {
	Pos
	Shard  int
	Expiry int64 // of the record when indexed (ms)
}

// EntryOf decodes an index entry of a shard; an entry that is not one of ours is skipped (false).
func EntryOf(shard int, m redis.XMessage) (Entry, bool) {
	ms, seq, ok := ParseStreamID(m.ID)
	hash, _ := m.Values["d"].(string)
	x, _ := m.Values["x"].(string)
	expiry, err := strconv.ParseInt(x, 10, 64)
	if !ok || len(hash) != 12 || err != nil {
		return Entry{}, false
	}
	return Entry{Pos: Pos{MS: ms, Seq: seq, ID: rdb.IndexedID(shard, hash)}, Shard: shard, Expiry: expiry}, true
}

// record names the record e points at.
func (e Entry) record() rdb.IndexedRecord {
	return rdb.IndexedRecord{Shard: e.Shard, ID: e.ID, Expiry: e.Expiry}
}

// Newest returns the records the newest n entries of reads name (reads[s] from shard s, each read newest
// first and of at most batch entries), as far as the reads are known to hold every shard's (merge).
func Newest(reads [][]redis.XMessage, batch, n int) []rdb.IndexedRecord {
	valid, frontier := merge(reads, nil, batch)
	take := valid[:min(ready(valid, frontier), n)]
	refs := make([]rdb.IndexedRecord, len(take))
	for i, e := range take {
		refs[i] = e.record()
	}
	return refs
}

// merge merges one round of shard reads (reads[s] from shard s) into the entries after pos, in listing
// order, and returns with them the frontier: a shard whose read was full may hold more entries after
// its last one, so only entries up to the highest such last entry are known to be the next ones of the
// listing. frontier is nil when no read was full. A read from pos holds at most one entry at or before
// pos (a shard's stream ids are unique), and batch is at least 2, so every full read moves the listing
// on.
func merge(reads [][]redis.XMessage, pos *Pos, batch int) (valid []Entry, frontier *Pos) {
	for s, msgs := range reads {
		for _, m := range msgs {
			e, ok := EntryOf(s, m)
			if ok && (pos == nil || pos.Before(e.Pos)) {
				valid = append(valid, e)
			}
		}
		if len(msgs) < batch {
			continue // the shard has nothing more in range
		}
		if last, ok := lastPos(s, msgs[len(msgs)-1]); ok && (frontier == nil || last.Before(*frontier)) {
			frontier = &last
		}
	}
	slices.SortFunc(valid, func(a, b Entry) int { return compare(a.Pos, b.Pos) })
	return valid, frontier
}

// lastPos is the position of m, the last entry of a full read of a shard. An entry of another shape
// still holds its place, so its stream id alone (with the lowest delivery id) marks it; one whose id
// is not a stream id has none.
func lastPos(shard int, m redis.XMessage) (Pos, bool) {
	ms, seq, ok := ParseStreamID(m.ID)
	if !ok {
		return Pos{}, false
	}
	if e, ok := EntryOf(shard, m); ok {
		return e.Pos, true
	}
	return Pos{MS: ms, Seq: seq}, true
}

// ready counts the leading entries of valid (in listing order) that are known to be the next ones of
// the listing: those not after frontier, or all of them when frontier is nil.
func ready(valid []Entry, frontier *Pos) int {
	if frontier == nil {
		return len(valid)
	}
	n := 0
	for n < len(valid) && !frontier.Before(valid[n].Pos) {
		n++
	}
	return n
}
