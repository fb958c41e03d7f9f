package webhooks

// The catalog of event types as a process sees it: read whole, at most once per eventTypeCacheTTL, by
// a script that answers only the catalog's version while it is unchanged; each type's schema compiled
// once per version of it, on the first event that needs it. A Dispatch pays no round trip for the
// catalog but the one read per eventTypeCacheTTL, whether or not any type is registered.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/schema"
)

// eventTypeCacheTTL bounds how long a process uses the catalog it read: a change made by any replica is
// enforced by every replica's Dispatch within this time (at once by the replica that made it).
const eventTypeCacheTTL = subscriberCacheTTL

// eventTypeCache is a process's copy of the catalog.
type eventTypeCache struct {
	rdb  redis.UniversalClient
	keys rdb.Keys
	sem  chan struct{} // held by the one read in progress

	mu     sync.Mutex
	cat    *catalog  // nil: never read
	gen    uint64    // bumped by every change of the catalog this process makes
	failed time.Time // when the last read failed
}

// eventTypeLenientWait bounds how long a lenient get (ValidateEvent's) waits for Redis.
const eventTypeLenientWait = 250 * time.Millisecond

func newEventTypeCache(c redis.UniversalClient, keys rdb.Keys) *eventTypeCache {
	return &eventTypeCache{rdb: c, keys: keys, sem: make(chan struct{}, 1)}
}

// catalog is the catalog as read at a time. It is never changed once built.
type catalog struct {
	version string
	at      time.Time
	types   map[string]*catalogEntry
}

// catalogEntry is one type as stored, its schema compiled on first use.
type catalogEntry struct {
	raw    string
	schema json.RawMessage // nil: no schema
	bad    error           // the stored JSON does not decode
	name   string

	once     sync.Once
	compiled *schema.Schema
	err      error
}

func newCatalogEntry(name, raw string) *catalogEntry {
	e := &catalogEntry{raw: raw, name: name}
	var t EventType
	if err := json.Unmarshal([]byte(raw), &t); err != nil {
		e.bad = fmt.Errorf("the stored type does not decode: %w", err)
	} else if len(t.Schema) > 0 && !isJSONNull(t.Schema) {
		e.schema = t.Schema
	}
	return e
}

// validator is the entry's compiled schema (nil when it has none), compiled by the first caller.
func (e *catalogEntry) validator() (*schema.Schema, error) {
	if e.bad != nil {
		return nil, e.bad
	}
	if e.schema == nil {
		return nil, nil
	}
	e.once.Do(func() { e.compiled, e.err = schema.Compile(e.name, e.schema) })
	return e.compiled, e.err
}

// invalidate makes the next get read the catalog: this process changed it.
func (c *eventTypeCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if c.cat != nil {
		stale := *c.cat
		stale.at = time.Time{}
		c.cat = &stale
	}
}

// get returns the catalog, read again when the copy held is eventTypeCacheTTL old. When Redis cannot
// answer, it returns the copy held (nil if none was ever read) with the error. A lenient get (for
// ValidateEvent, which must answer while Redis is down) waits at most eventTypeLenientWait, and does
// not try Redis again within eventTypeCacheTTL of a failed read.
func (c *eventTypeCache) get(ctx context.Context, lenient bool) (*catalog, error) {
	c.mu.Lock()
	cat, failed := c.cat, c.failed
	c.mu.Unlock()
	if cat != nil && time.Since(cat.at) < eventTypeCacheTTL {
		return cat, nil
	}
	if lenient {
		if time.Since(failed) < eventTypeCacheTTL {
			return cat, errors.New("webhooks: read the event types: failed lately")
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, eventTypeLenientWait)
		defer cancel()
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return cat, fmt.Errorf("webhooks: read the event types: %w", ctx.Err())
	}
	defer func() { <-c.sem }()
	c.mu.Lock()
	cat, gen := c.cat, c.gen
	c.mu.Unlock()
	if cat != nil && time.Since(cat.at) < eventTypeCacheTTL {
		return cat, nil // read by the call this one waited for
	}
	held := ""
	if cat != nil {
		held = cat.version
	}
	now := time.Now()
	reply, err := rdb.EventTypes.Run(ctx, c.rdb, []string{c.keys.EventTypes(), c.keys.EventTypesVersion()}, held).StringSlice()
	if err != nil || len(reply) == 0 || len(reply)%2 == 0 {
		if err == nil {
			err = fmt.Errorf("unexpected reply of %d items", len(reply))
		}
		c.mu.Lock()
		c.failed = time.Now()
		c.mu.Unlock()
		return cat, fmt.Errorf("webhooks: read the event types: %w", err)
	}
	next := &catalog{version: reply[0], at: now}
	if len(reply) == 1 && cat != nil && held != "" && reply[0] == held {
		next.types = cat.types
	} else {
		next.types = make(map[string]*catalogEntry, (len(reply)-1)/2)
		for i := 1; i+1 < len(reply); i += 2 {
			name, raw := reply[i], reply[i+1]
			if cat != nil && cat.types[name] != nil && cat.types[name].raw == raw {
				next.types[name] = cat.types[name] // compiled once per version of the type
				continue
			}
			next.types[name] = newCatalogEntry(name, raw)
		}
	}
	c.mu.Lock()
	if c.gen != gen {
		next.at = time.Time{} // a change made meanwhile by this process may postdate what was read
	}
	c.cat = next
	c.mu.Unlock()
	return next, nil
}
