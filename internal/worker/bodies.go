package worker

import (
	"sync"
	"time"
)

// Bodies keeps the bodies of the events this Dispatcher claimed lately and left to the worker
// (Enqueue, an attempt deferred), so that its own worker starts those attempts without reading them
// back. A stored event never changes: an entry is only ever stale by expiring, and it is kept
// BodiesTTL, far below any Retention. Bounded: at most MaxBodyBytes of bodies, the oldest
// dropped first. Safe for concurrent use.
type Bodies struct {
	mu      sync.Mutex
	entries map[string]recentBody // event key -> body
	order   []string              // the keys of entries, oldest first
	bytes   int                   // of the bodies in entries
}

// recentBody is one kept body and when it was kept.
type recentBody struct {
	body []byte
	at   time.Time
}

const (
	// BodiesTTL is how long Bodies keeps a body.
	BodiesTTL = 10 * time.Second
	// MaxBodyBytes bounds the bodies Bodies keeps, all together.
	MaxBodyBytes = 16 << 20
)

// NewBodies is an empty Bodies.
func NewBodies() *Bodies { return &Bodies{entries: map[string]recentBody{}} }

// Put keeps the body of the event stored under key, as of now, dropping the oldest bodies beyond
// MaxBodyBytes and those expired ahead of them.
func (c *Bodies) Put(key string, body []byte, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[key]; ok {
		c.bytes += len(body) - len(old.body)
	} else {
		c.order = append(c.order, key)
		c.bytes += len(body)
	}
	c.entries[key] = recentBody{body: body, at: now}
	for len(c.order) > 0 {
		e := c.entries[c.order[0]]
		if c.bytes <= MaxBodyBytes && now.Sub(e.at) < BodiesTTL && !now.Before(e.at) {
			break
		}
		c.bytes -= len(e.body)
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
}

// Get returns the body kept for key, if kept within BodiesTTL of now.
func (c *Bodies) Get(key string, now time.Time) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || now.Sub(e.at) >= BodiesTTL || now.Before(e.at) {
		return nil, false
	}
	return e.body, true
}
