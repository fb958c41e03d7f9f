package pgxoutbox

import (
	"sync/atomic"
	"time"
)

// fullScanEvery is how often a Run's passes read the pending rows from the start of the index.
const fullScanEvery = time.Second

// floor is where a Run's passes start reading the pending index: the oldest pending row's id as a
// full scan last found it. The relay deletes rows at the low end of the index, whose entries stay
// (dead) until VACUUM, and a scan from the start walks them all: 0.6ms and 1,200 buffers per pass
// with 200,000 of them, against 0.07ms and 112 buffers from the floor (autovacuum comes by once a
// minute at most). A row can appear below the floor only by a transaction that commits after
// the full scan with an id drawn before it (one open across it); a full scan, once per
// fullScanEvery, finds it. Order is not at stake: the claim checks each key's older rows from the
// start of its index (behind).
type floor struct {
	id       atomic.Int64
	lastFull atomic.Int64 // UnixNano of the last full scan's start
}

// next returns the id the next pass reads from, and whether it is a full scan (from 0, taken by one
// pass per fullScanEvery), which then sets the floor (set).
func (f *floor) next(now time.Time) (from int64, full bool) {
	last := f.lastFull.Load()
	if now.UnixNano()-last >= int64(fullScanEvery) && f.lastFull.CompareAndSwap(last, now.UnixNano()) {
		return 0, true
	}
	return f.id.Load(), false
}

// set records the oldest pending id a full scan found; none (an empty table) leaves the floor.
func (f *floor) set(oldest *int64) {
	if oldest != nil {
		f.id.Store(*oldest)
	}
}
