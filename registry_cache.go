package webhooks

// The registry as a process sees it: subscribers resolved per tenant and event type, and webhooks by
// id, each cached for at most subscriberCacheTTL.

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
// process-local cache at most subscriberCacheTTL old, otherwise with one round trip (rdb.IndexedWebhooks)
// that reads only that tenant's subscription hashes and the webhooks they name.
func (r *WebhookRepo) subscribers(ctx context.Context, tenant, eventType string) ([]*storedWebhook, error) {
	now := time.Now()
	cacheKey := tenant + "\x00" + eventType
	r.mu.Lock()
	e, ok := r.cache[cacheKey]
	gen := r.gen
	r.mu.Unlock()
	if ok && now.Sub(e.at) < subscriberCacheTTL {
		return e.list, nil
	}
	keys := []string{r.keys.Webhooks()}
	for _, p := range patternsFor(eventType) {
		keys = append(keys, r.keys.TenantSubscribers(tenant, p))
	}
	bodies, err := rdb.IndexedWebhooks.Run(ctx, r.rdb, keys).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("webhooks: resolve subscribers of %s: %w", eventType, err)
	}
	list := make([]*storedWebhook, 0, len(bodies))
	for _, raw := range bodies {
		s, err := rdb.ParseWebhookRecord(raw, r.ring)
		if err != nil || s.Disabled || s.Tenant != tenant {
			continue
		}
		list = append(list, s)
	}
	slices.SortFunc(list, func(a, b *storedWebhook) int { return strings.Compare(a.ID, b.ID) })
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

// decodeMany decodes an HMGET reply of the registry: a missing id is left out, and an id whose JSON
// cannot be decoded is reported in broken.
func (r *WebhookRepo) decodeMany(ids []string, vals []any) (found map[string]*storedWebhook, broken map[string]error) {
	found = make(map[string]*storedWebhook, len(ids))
	for i, v := range vals {
		raw, ok := v.(string)
		if !ok || i >= len(ids) {
			continue
		}
		s, err := rdb.ParseWebhookRecord(raw, r.ring)
		if err != nil {
			if broken == nil {
				broken = map[string]error{}
			}
			broken[ids[i]] = fmt.Errorf("webhooks: decode webhook %s: %w", ids[i], err)
			continue
		}
		found[ids[i]] = s
	}
	return found, broken
}

// byIDs returns webhooks by id, each from a process-local cache at most subscriberCacheTTL old (a
// deleted webhook is cached as missing), the others read in one round trip. Webhooks whose stored JSON
// cannot be decoded are reported in broken, and not cached.
func (r *WebhookRepo) byIDs(ctx context.Context, ids []string) (map[string]*storedWebhook, map[string]error, error) {
	now := time.Now()
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
	vals, err := r.rdb.HMGet(ctx, r.keys.Webhooks(), missing...).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("webhooks: load webhooks: %w", err)
	}
	read, broken := r.decodeMany(missing, vals)
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
