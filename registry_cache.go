package webhooks

// The registry as a process sees it: subscribers resolved per tenant and event type, and webhooks by
// id, each cached for at most subscriberCacheTTL.

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// byIDEntry is a webhook as read at a time (nil: not found).
type byIDEntry struct {
	at time.Time
	wh *storedWebhook
}

type subscriberEntry struct {
	at   time.Time
	list []*storedWebhook
}

func (r *WebhookRepo) invalidate() {
	r.mu.Lock()
	clear(r.cache)
	clear(r.byID)
	r.gen++
	r.mu.Unlock()
}

// subscribers returns the enabled webhooks of a tenant whose patterns select eventType, from a
// process-local cache at most subscriberCacheTTL old, otherwise with one round trip (rdb.ReadSubscribers)
// that reads only that tenant's subscription hashes and the webhooks they name.
func (r *WebhookRepo) subscribers(ctx context.Context, tenant, eventType string) ([]*storedWebhook, error) {
	now := r.now()
	cacheKey := tenant + "\x00" + eventType
	r.mu.Lock()
	e, ok := r.cache[cacheKey]
	gen := r.gen
	r.mu.Unlock()
	if ok && now.Sub(e.at) < subscriberCacheTTL {
		return e.list, nil
	}
	list, err := rdb.ReadSubscribers(ctx, r.rdb, r.keys, r.ring, tenant, eventType, patternsFor(eventType))
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if len(r.cache) > 4096 {
		clear(r.cache) // bounded: event types and tenants are callers' choice
	}
	if r.gen == gen { // a change made meanwhile by this process may postdate what was read
		r.cache[cacheKey] = subscriberEntry{at: now, list: list}
	}
	r.mu.Unlock()
	return list, nil
}

// byIDs returns webhooks by id, each from a process-local cache at most subscriberCacheTTL old (a
// deleted webhook is cached as missing), the others read in one round trip (rdb.ReadWebhooks). Webhooks whose stored JSON
// cannot be decoded are reported in broken, and not cached.
func (r *WebhookRepo) byIDs(ctx context.Context, ids []string) (map[string]*storedWebhook, map[string]error, error) {
	now := r.now()
	found := make(map[string]*storedWebhook, len(ids))
	var missing []string
	r.mu.Lock()
	gen := r.gen
	for _, id := range ids {
		if e, ok := r.byID[id]; ok && now.Sub(e.at) < subscriberCacheTTL {
			if e.wh != nil {
				found[id] = e.wh
			}
			continue
		}
		missing = append(missing, id)
	}
	r.mu.Unlock()
	if len(missing) == 0 {
		return found, nil, nil
	}
	read, broken, err := rdb.ReadWebhooks(ctx, r.rdb, r.keys, r.ring, missing)
	if err != nil {
		return nil, nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil || len(r.byID) > 100_000 {
		r.byID = map[string]byIDEntry{}
	}
	for _, id := range missing {
		if broken[id] != nil {
			continue
		}
		found[id] = read[id]
		if read[id] == nil {
			delete(found, id)
		}
		if r.gen == gen { // a change made meanwhile by this process may postdate what was read
			r.byID[id] = byIDEntry{at: now, wh: read[id]}
		}
	}
	return found, broken, nil
}
