package webhooks

import (
	"context"
	"sync"
	"time"
)

const (
	circuitCacheTTL = 250 * time.Millisecond // how long a replica uses a circuit it read or put, unread
)

// circuitCache keeps circuits in memory for circuitCacheTTL (each State as of its read or put; a read
// stores nothing over a put made meanwhile). Safe for concurrent use; make it with newCircuitCache.
type circuitCache struct {
	mu      sync.Mutex
	entries map[string]Health
	at      map[string]time.Time // when each entry was read or put
}

func newCircuitCache() *circuitCache {
	return &circuitCache{entries: map[string]Health{}, at: map[string]time.Time{}}
}

// get returns the circuits of ids at now: from memory when cached within circuitCacheTTL, else in one HMGET.
func (c *circuitCache) get(ctx context.Context, s *circuitStore, now time.Time, ids []string) (map[string]Health, error) {
	out, missing := make(map[string]Health, len(ids)), []string(nil)
	c.mu.Lock()
	for _, id := range ids {
		if out[id] = c.entries[id]; now.Sub(c.at[id]) >= circuitCacheTTL { // not cached: at is 0
			missing = append(missing, id)
		}
	}
	c.mu.Unlock()
	read, err := s.read(ctx, now, missing...) // no round trip when none is missing
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) > 100_000 { // mostly webhooks no longer asked for; the others are read again
		clear(c.entries)
		clear(c.at)
	}
	for id, h := range read {
		if now.Sub(c.at[id]) >= circuitCacheTTL { // else put (or read) during this read: keep it
			c.entries[id], c.at[id] = h, now
		}
		out[id] = c.entries[id]
	}
	return out, nil
}

// put caches h as of now, so this replica sees at once the state it changed.
func (c *circuitCache) put(h Health, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[h.WebhookID], c.at[h.WebhookID] = h, now
}

// peek returns the circuits of ids cached within circuitCacheTTL, without reading Redis: what Enqueue
// knows for free. A webhook missing from the map is not known to be open.
func (c *circuitCache) peek(now time.Time, ids []string) map[string]Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Health, len(ids))
	for _, id := range ids {
		if at, ok := c.at[id]; ok && now.Sub(at) < circuitCacheTTL {
			out[id] = c.entries[id]
		}
	}
	return out
}

// forget drops a webhook's cached circuit: the next read goes to Redis.
func (c *circuitCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, id)
	delete(c.at, id)
}
