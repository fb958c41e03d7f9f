package breaker

import (
	"context"
	"sync"
	"time"

	"github.com/smartdrop/webhooks/internal/types"
)

// CacheTTL is how long a process uses a circuit it read or put, unread.
const CacheTTL = 250 * time.Millisecond

// cache keeps circuits in memory for CacheTTL (each State as of its read or put; a read stores
// nothing over a put made meanwhile). Safe for concurrent use; make it with newCache.
type cache struct {
	mu      sync.Mutex
	entries map[string]types.Health
	at      map[string]time.Time // when each entry was read or put
}

func newCache() *cache {
	return &cache{entries: map[string]types.Health{}, at: map[string]time.Time{}}
}

// get returns the circuits of ids at now, in ids' order: from memory when cached within CacheTTL, else
// in one HMGET.
func (c *cache) get(ctx context.Context, s *store, now time.Time, ids []string) ([]types.Health, error) {
	out, missing := make([]types.Health, len(ids)), []string(nil)
	c.mu.Lock()
	for i, id := range ids {
		if out[i] = c.entries[id]; now.Sub(c.at[id]) >= CacheTTL { // not cached: at is 0
			missing = append(missing, id)
		}
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	read, err := s.read(ctx, now, missing...)
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
		if now.Sub(c.at[id]) >= CacheTTL { // else put (or read) during this read: keep it
			c.entries[id], c.at[id] = h, now
		}
	}
	for i, id := range ids {
		if _, ok := read[id]; ok {
			out[i] = c.entries[id]
		}
	}
	return out, nil
}

// put caches h as of now.
func (c *cache) put(h types.Health, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[h.WebhookID], c.at[h.WebhookID] = h, now
}

// peek returns the circuits of ids cached within CacheTTL, in ids' order, without reading Redis (a
// zero Health for one not cached).
func (c *cache) peek(now time.Time, ids []string) []types.Health {
	out := make([]types.Health, len(ids))
	for i, id := range ids {
		out[i], _ = c.lookup(now, id)
	}
	return out
}

// lookup returns a webhook's circuit when it is cached within CacheTTL, without reading Redis.
func (c *cache) lookup(now time.Time, id string) (types.Health, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.at[id]; ok && now.Sub(at) < CacheTTL {
		return c.entries[id], true
	}
	return types.Health{}, false
}

// forget drops a webhook's cached circuit: the next read goes to Redis.
func (c *cache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, id)
	delete(c.at, id)
}
