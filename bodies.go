package webhooks

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// recentBodies keeps the bodies of the events this Dispatcher claimed lately and left to the worker
// (Enqueue, an attempt deferred), so that its own worker starts those attempts without reading them
// back. A stored event never changes: an entry is only ever stale by expiring, and it is kept
// bodiesTTL, far below any Retention. Bounded: at most maxRecentBodyBytes of bodies, the oldest
// dropped first. Safe for concurrent use.
type recentBodies struct {
	mu      sync.Mutex
	entries map[string]recentBody // event key -> body
	order   []string              // the keys of entries, oldest first
	bytes   int                   // of the bodies in entries
}

type recentBody struct {
	body []byte
	at   time.Time
}

const (
	bodiesTTL          = 10 * time.Second
	maxRecentBodyBytes = 16 << 20
)

func newRecentBodies() *recentBodies { return &recentBodies{entries: map[string]recentBody{}} }

// put keeps the body of the event stored under key, as of now, dropping the oldest bodies beyond
// maxRecentBodyBytes and those expired ahead of them.
func (c *recentBodies) put(key string, body []byte, now time.Time) {
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
		if c.bytes <= maxRecentBodyBytes && now.Sub(e.at) < bodiesTTL && !now.Before(e.at) {
			break
		}
		c.bytes -= len(e.body)
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
}

// get returns the body kept for key, if kept within bodiesTTL of now.
func (c *recentBodies) get(key string, now time.Time) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || now.Sub(e.at) >= bodiesTTL || now.Before(e.at) {
		return nil, false
	}
	return e.body, true
}

// loadBodies returns the request bodies of leased deliveries: those of events this Dispatcher claimed lately from memory, the others (each event's once) in one round
// trip. A body that has expired is nil.
func (d *Dispatcher) loadBodies(ctx context.Context, jobs []leasedDelivery) ([][]byte, error) {
	now := time.Now()
	bodies := make([][]byte, len(jobs))
	gets := map[string]*redis.StringCmd{}
	var pipe redis.Pipeliner
	for i, j := range jobs {
		key := j.bodyKey(d.keys)
		if body, ok := d.bodies.get(key, now); ok {
			bodies[i] = body
			continue
		}
		if gets[key] == nil {
			if pipe == nil {
				pipe = d.rdb.Pipeline()
			}
			gets[key] = pipe.Get(ctx, key)
		}
	}
	if pipe == nil {
		return bodies, nil
	}
	_, _ = pipe.Exec(ctx) // errors are read per command: a missing body is not one
	for i, j := range jobs {
		g := gets[j.bodyKey(d.keys)]
		if g == nil {
			continue
		}
		switch err := g.Err(); {
		case err == nil:
			bodies[i] = eventBody(g.Val())
		case !isNil(err):
			return nil, fmt.Errorf("webhooks: load event bodies: %w", err)
		}
	}
	return bodies, nil
}
