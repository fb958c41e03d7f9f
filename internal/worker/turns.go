package worker

import (
	"slices"
	"strings"
	"sync"
)

// Want is a webhook a pass may lease for: its room (in-flight slots free, or 1 for its probe) and its
// probe token, when the lease is its circuit's probe.
type Want struct {
	ID    string
	Room  int
	Probe string
}

// Turns is where the next pass's turns start: the id of the last webhook a pass with fewer slots than
// webhooks served. The zero value is ready to use; safe for concurrent use.
type Turns struct {
	mu   sync.Mutex
	last string
}

// Order sorts wants by webhook id and, when free slots are fewer than wants (one each, in turn), starts
// them after the last webhook the previous such pass served, and remembers this pass's last: the turns
// go round the webhooks due by id, whatever order the scan found them in, so none is left out pass
// after pass.
func (t *Turns) Order(wants []Want, free int) []Want {
	slices.SortFunc(wants, func(a, b Want) int { return strings.Compare(a.ID, b.ID) })
	if free >= len(wants) || free <= 0 {
		return wants
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k, _ := slices.BinarySearchFunc(wants, t.last, func(w Want, id string) int {
		if w.ID <= id {
			return -1
		}
		return 1
	}) // the first id after last
	k %= len(wants)
	wants = slices.Concat(wants[k:], wants[:k])
	t.last = wants[free-1].ID
	return wants
}

// Share shares free slots one at a time in turn among webhooks, each up to its room, and returns each
// one's share.
func Share(rooms []int, free int) []int {
	alloc := make([]int, len(rooms))
	for gave := true; free > 0 && gave; {
		gave = false
		for i := range rooms {
			if free > 0 && alloc[i] < rooms[i] {
				alloc[i]++
				free--
				gave = true
			}
		}
	}
	return alloc
}
