package worker

import (
	"container/heap"
	"sync"
)

// LocalDue is what this Dispatcher's own writes queued for the worker: the ids of the deliveries its
// claims left to the worker and of the retries its outcomes scheduled, by shard and webhook, with when
// each is due. Its worker leases them by id, without reading the ready zsets or the queues to find
// them (the lease script checks each id against its queue, so an id another replica took meanwhile
// costs one ZSCORE). It is a hint, never the truth: what it does not hold (other replicas' writes, ids
// dropped when it is full) the worker finds by reading the schedule (Leaser.scan). It holds at most max
// ids; an id that does not fit marks its shard for the worker's next scan instead.
type LocalDue struct {
	mu    sync.Mutex
	max   int
	n     int
	now   map[Queue][]string // due ids in the order they were added
	later laterHeap          // ids not yet due, earliest first
	ids   map[string]bool    // every id held, to drop the ones a scan's read leased
	read  map[Queue]int64    // when the worker last read each queue it holds ids of (ms)
}

// LocalReadEvery is how often the worker reads a queue the local hint holds due ids of, when a scan
// finds it due: between reads it leases the hint's ids, and a read takes the queue's earliest due
// ids, whoever queued them, so another replica's deliveries in a queue this Dispatcher keeps feeding
// wait no more than this (and the hint's own ids stay in the queue's order).
const LocalReadEvery = 100 // ms

// Queue is a webhook's queue in a shard.
type Queue struct {
	Shard   int
	Webhook string
}

// laterID is an id due at ms.
type laterID struct {
	key Queue
	id  string
	at  int64
}

// NewLocalDue is an empty LocalDue that holds at most max ids.
func NewLocalDue(max int) *LocalDue {
	return &LocalDue{max: max, now: map[Queue][]string{}, ids: map[string]bool{}, read: map[Queue]int64{}}
}

// Add holds delivery id of webhook in shard, due at ms; it reports false when full (not held).
func (l *LocalDue) Add(shard int, webhook, id string, at, nowMs int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ids[id] {
		return true
	}
	if l.n >= l.max {
		return false
	}
	l.n++
	l.ids[id] = true
	k := Queue{shard, webhook}
	if at <= nowMs {
		l.now[k] = append(l.now[k], id)
	} else {
		heap.Push(&l.later, laterID{key: k, id: id, at: at})
	}
	return true
}

// Due returns the webhooks' queues with ids due at nowMs (moving the ids that have come due first),
// and the earliest due time of the others (0 if none).
func (l *LocalDue) Due(nowMs int64) ([]Queue, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.later) > 0 && l.later[0].at <= nowMs {
		x := heap.Pop(&l.later).(laterID)
		l.now[x.key] = append(l.now[x.key], x.id)
	}
	out := make([]Queue, 0, len(l.now))
	for k := range l.now {
		out = append(out, k)
	}
	var next int64
	if len(l.later) > 0 {
		next = l.later[0].at
	}
	return out, next
}

// Serves reports whether the worker should lease a queue a scan found due from the hint's ids rather
// than read it: the hint holds due ids of it, and it was read less than LocalReadEvery ago. When not,
// it notes the read the caller makes now.
func (l *LocalDue) Serves(k Queue, nowMs int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.now[k]) > 0 && nowMs-l.read[k] < LocalReadEvery && nowMs >= l.read[k] {
		return true
	}
	if len(l.now[k]) > 0 || len(l.read) < 2*l.max {
		l.read[k] = nowMs
	}
	return false
}

// Takeable is how many of its due ids (as of the last call of Due) a pass could lease, room(webhook)
// being how many more attempts a webhook may start.
func (l *LocalDue) Takeable(room func(webhook string) int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	byWebhook := map[string]int{}
	for k, ids := range l.now {
		byWebhook[k.Webhook] += len(ids)
	}
	n := 0
	for id, ids := range byWebhook {
		n += min(ids, max(room(id), 0))
	}
	return n
}

// Delay holds a webhook's due ids in a shard until at: its webhook was parked (an open circuit, its
// rate limit), and a pass would take them only to park it again.
func (l *LocalDue) Delay(shard int, webhook string, at int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := Queue{shard, webhook}
	for _, id := range l.now[k] {
		heap.Push(&l.later, laterID{key: k, id: id, at: at})
	}
	delete(l.now, k)
}

// Take removes and returns up to n due ids of a webhook's queue in a shard.
func (l *LocalDue) Take(shard int, webhook string, n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := Queue{shard, webhook}
	ids := l.now[k]
	n = min(n, len(ids))
	out := ids[:n:n]
	if n == len(ids) {
		delete(l.now, k)
		delete(l.read, k)
	} else {
		l.now[k] = ids[n:]
	}
	for _, id := range out {
		delete(l.ids, id)
	}
	l.n -= n
	return out
}

// PutBack gives back ids that Take returned but were not leased: due again at once, ahead of the
// others, or at at (ms) when it is not 0 (their webhook was parked until then).
func (l *LocalDue) PutBack(shard int, webhook string, ids []string, at int64) {
	if len(ids) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := Queue{shard, webhook}
	back := make([]string, 0, len(ids)+len(l.now[k]))
	for _, id := range ids {
		if !l.ids[id] {
			l.ids[id] = true
			back = append(back, id)
		}
	}
	l.n += len(back)
	if at != 0 {
		for _, id := range back {
			heap.Push(&l.later, laterID{key: k, id: id, at: at})
		}
		return
	}
	l.now[k] = append(back, l.now[k]...)
}

// Clear drops every id (Run ended: nothing leases them here any more).
func (l *LocalDue) Clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n, l.now, l.later, l.ids, l.read = 0, map[Queue][]string{}, nil, map[string]bool{}, map[Queue]int64{}
}

// Forget drops ids that were leased some other way (a scan's read): their hint is stale. Ids it holds
// later are dropped as they come due.
func (l *LocalDue) Forget(shard int, webhook string, ids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := Queue{shard, webhook}
	held := l.now[k]
	if len(held) == 0 {
		return
	}
	gone := map[string]bool{}
	for _, id := range ids {
		if l.ids[id] {
			gone[id] = true
		}
	}
	if len(gone) == 0 {
		return
	}
	kept := held[:0]
	for _, id := range held {
		if gone[id] {
			delete(l.ids, id)
			l.n--
		} else {
			kept = append(kept, id)
		}
	}
	if len(kept) == 0 {
		delete(l.now, k)
	} else {
		l.now[k] = kept
	}
}

// laterHeap orders ids not yet due by due time.
type laterHeap []laterID

func (h laterHeap) Len() int           { return len(h) }
func (h laterHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h laterHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *laterHeap) Push(x any)        { *h = append(*h, x.(laterID)) }
func (h *laterHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// With adds to the webhooks a scan found due (scanned) those whose queues the hint holds due ids of
// (local, as Due returned them), and marks the ones found by both that the hint serves (Serves): their
// queues are not read.
func (l *LocalDue) With(nowMs int64, scanned []Due, local []Queue) []Due {
	if len(local) == 0 {
		return scanned
	}
	seen := make(map[Queue]bool, len(scanned))
	for i, w := range scanned {
		k := Queue{Shard: w.Shard, Webhook: w.ID}
		seen[k] = true
		scanned[i].Local = l.Serves(k, nowMs)
	}
	for _, q := range local {
		if !seen[q] {
			scanned = append(scanned, Due{Shard: q.Shard, ID: q.Webhook, Local: true})
		}
	}
	return scanned
}
