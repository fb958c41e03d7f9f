// Package eventtypes is a process's copy of the catalog of event types (the root's EventTypeRepo
// stores it): read whole, at most once per TTL, by a script that answers only the catalog's version
// while it is unchanged; each type's schema compiled once per version of it, on the first event that
// needs it. A Dispatch pays no round trip for the catalog but the one read per TTL, whether or not any
// type is registered.
package eventtypes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/schema"
	"github.com/smartdrop/webhooks/internal/types"
)

// Cache is a process's copy of the catalog.
type Cache struct {
	rdb  redis.UniversalClient
	keys rdb.Keys
	ttl  time.Duration // how long a read catalog is used
	now  func() time.Time
	sem  chan struct{} // held by the one read in progress

	mu     sync.Mutex
	cat    *Catalog  // nil: never read
	gen    uint64    // bumped by every change of the catalog this process makes
	failed time.Time // when the last read failed
}

// lenientWait bounds how long a lenient Get (ValidateEvent's) waits for Redis.
const lenientWait = 250 * time.Millisecond

// New returns the cache of the catalog stored under keys in c, which uses a catalog read for ttl on
// the clock now: a change made by any replica is enforced by every replica within ttl (at once by the
// replica that made it, which calls Invalidate).
func New(c redis.UniversalClient, keys rdb.Keys, ttl time.Duration, now func() time.Time) *Cache {
	return &Cache{rdb: c, keys: keys, ttl: ttl, now: now, sem: make(chan struct{}, 1)}
}

// Catalog is the catalog as read at a time. It is never changed once built.
type Catalog struct {
	version string
	at      time.Time
	types   map[string]*Entry
	list    *listing // shared by the copies of one version
}

// listing is a version of the catalog decoded once, for the routes that answer it whole (GET
// /event-types and its OpenAPI document), and what each makes of it, made once per version.
type listing struct {
	once  sync.Once
	types []types.EventType // by name; a type whose stored JSON does not decode is left out

	mu      sync.Mutex
	answers map[string]answer
}

// answer is what a route made of a listing.
type answer struct {
	body []byte
	err  error
}

// Version is the catalog's version: a random token replaced by every change.
func (c *Catalog) Version() string { return c.version }

// List is the catalog's types sorted by name, decoded once per version of the catalog (every caller
// shares it: it must not be changed). A type whose stored JSON does not decode is left out.
func (c *Catalog) List() []types.EventType {
	c.list.once.Do(func() {
		out := make([]types.EventType, 0, len(c.types))
		for _, e := range c.types {
			var t types.EventType
			if e.bad == nil && json.Unmarshal([]byte(e.raw), &t) == nil {
				out = append(out, t)
			}
		}
		slices.SortFunc(out, func(a, b types.EventType) int { return strings.Compare(a.Name, b.Name) })
		c.list.types = out
	})
	return c.list.types
}

// Answer is what build makes of List, made once per version of the catalog and kind (each route's
// encoded answer): the routes that answer the catalog whole decode and encode it once per change, not
// per request.
func (c *Catalog) Answer(kind string, build func([]types.EventType) ([]byte, error)) ([]byte, error) {
	list := c.List()
	c.list.mu.Lock()
	defer c.list.mu.Unlock()
	if a, ok := c.list.answers[kind]; ok {
		return a.body, a.err
	}
	body, err := build(list)
	if c.list.answers == nil {
		c.list.answers = map[string]answer{}
	}
	c.list.answers[kind] = answer{body, err}
	return body, err
}

// Type is the entry of the type named name, nil when the catalog holds none.
func (c *Catalog) Type(name string) *Entry { return c.types[name] }

// Entry is one type as stored, its schema compiled on first use.
type Entry struct {
	raw    string
	schema json.RawMessage // nil: no schema
	bad    error           // the stored JSON does not decode
	name   string

	compile  func(name string, raw []byte) (*schema.Schema, error) // schema.Compile
	started  atomic.Bool                                           // set by the caller that compiles the schema
	ready    chan struct{}                                         // closed once compiled and err are set
	compiled *schema.Schema
	err      error
}

func newEntry(name, raw string) *Entry {
	e := &Entry{raw: raw, name: name, compile: schema.Compile, ready: make(chan struct{})}
	var t types.EventType
	if err := json.Unmarshal([]byte(raw), &t); err != nil {
		e.bad = fmt.Errorf("the stored type does not decode: %w", err)
	} else if len(t.Schema) > 0 && !types.IsJSONNull(t.Schema) {
		e.schema = t.Schema
	}
	return e
}

// Validator is the entry's compiled schema (nil when it has none), compiled by the first caller
// (schema.Compile's bounds keep that short); another caller waits for it within ctx, and fails with
// ctx's error when ctx ends first.
func (e *Entry) Validator(ctx context.Context) (*schema.Schema, error) {
	if e.bad != nil {
		return nil, e.bad
	}
	if e.schema == nil {
		return nil, nil
	}
	if e.started.CompareAndSwap(false, true) {
		e.compiled, e.err = e.compile(e.name, e.schema)
		close(e.ready)
	}
	select {
	case <-e.ready:
		return e.compiled, e.err
	default:
	}
	select {
	case <-e.ready:
		return e.compiled, e.err
	case <-ctx.Done():
		return nil, fmt.Errorf("webhooks: wait for the schema of %s to compile: %w", e.name, ctx.Err())
	}
}

// Invalidate makes the next Get read the catalog: this process changed it.
func (c *Cache) Invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if c.cat != nil {
		stale := *c.cat
		stale.at = time.Time{}
		c.cat = &stale
	}
}

// Get returns the catalog, read again once the copy held is as old as the ttl. When Redis cannot
// answer, it returns the copy held (nil if none was ever read) with the error. A lenient get (for
// ValidateEvent, which must answer while Redis is down) waits at most lenientWait, and does not try
// Redis again within the ttl of a failed read.
func (c *Cache) Get(ctx context.Context, lenient bool) (*Catalog, error) {
	c.mu.Lock()
	cat, failed := c.cat, c.failed
	c.mu.Unlock()
	if cat != nil && c.now().Sub(cat.at) < c.ttl {
		return cat, nil
	}
	if lenient {
		if c.now().Sub(failed) < c.ttl {
			return cat, errors.New("webhooks: read the event types: failed lately")
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, lenientWait)
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
	if cat != nil && c.now().Sub(cat.at) < c.ttl {
		return cat, nil // read by the call this one waited for
	}
	held := ""
	if cat != nil {
		held = cat.version
	}
	now := c.now()
	reply, err := rdb.EventTypes.Run(ctx, c.rdb, []string{c.keys.EventTypes(), c.keys.EventTypesVersion()}, held).StringSlice()
	if err != nil || len(reply) == 0 || len(reply)%2 == 0 {
		if err == nil {
			err = fmt.Errorf("unexpected reply of %d items", len(reply))
		}
		c.mu.Lock()
		c.failed = c.now()
		c.mu.Unlock()
		return cat, fmt.Errorf("webhooks: read the event types: %w", err)
	}
	next := &Catalog{version: reply[0], at: now, list: &listing{}}
	if len(reply) == 1 && cat != nil && held != "" && reply[0] == held {
		next.types, next.list = cat.types, cat.list
	} else {
		next.types = make(map[string]*Entry, (len(reply)-1)/2)
		for i := 1; i+1 < len(reply); i += 2 {
			name, raw := reply[i], reply[i+1]
			if cat != nil && cat.types[name] != nil && cat.types[name].raw == raw {
				next.types[name] = cat.types[name] // compiled once per version of the type
				continue
			}
			next.types[name] = newEntry(name, raw)
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
