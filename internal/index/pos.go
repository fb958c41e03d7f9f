package index

import (
	"strconv"
	"strings"
)

// Pos is a position in a webhook's listing: an index entry's stream id (MS, Seq) and delivery id.
// The listing orders by MS, then Seq, then delivery id, all descending: within one shard that is the
// stream's own order (XREVRANGE), and shards merge by it.
type Pos struct {
	MS, Seq int64
	ID      string
}

// Before reports whether p comes before q in the listing.
func (p Pos) Before(q Pos) bool {
	switch {
	case p.MS != q.MS:
		return p.MS > q.MS
	case p.Seq != q.Seq:
		return p.Seq > q.Seq
	}
	return p.ID > q.ID
}

// compare orders positions as the listing does.
func compare(a, b Pos) int {
	switch {
	case a.Before(b):
		return -1
	case b.Before(a):
		return 1
	}
	return 0
}

// streamID is p's position in one shard's index: XREVRANGE from it (inclusive) reads p's entry, if the
// shard holds it, and what follows.
func (p Pos) streamID() string {
	return strconv.FormatInt(p.MS, 10) + "-" + strconv.FormatInt(p.Seq, 10)
}

// ParseStreamID reads a stream entry id, <ms>-<seq>.
func ParseStreamID(id string) (ms, seq int64, ok bool) {
	a, b, found := strings.Cut(id, "-")
	ms, err1 := strconv.ParseInt(a, 10, 64)
	seq, err2 := strconv.ParseInt(b, 10, 64)
	return ms, seq, found && err1 == nil && err2 == nil
}
