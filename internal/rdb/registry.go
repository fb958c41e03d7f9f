package rdb

// The registry's reads that the root's per-process cache of it fills from (a tenant's subscribers to
// an event type, and webhooks by id), and a tenant's webhooks.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/sealed"
)

// ReadSubscribers reads, in one round trip (the IndexedWebhooks script), the webhooks of tenant that
// subscribe to eventType through one of patterns (the patterns that select it): only that tenant's
// subscription hashes and the webhooks they name are read. It returns the enabled ones of tenant, by
// id; a record that cannot be decoded is left out.
func ReadSubscribers(ctx context.Context, c redis.UniversalClient, k Keys, ring *sealed.Ring, tenant, eventType string, patterns []string) ([]*WebhookRecord, error) {
	keys := []string{k.Webhooks()}
	for _, p := range patterns {
		keys = append(keys, k.TenantSubscribers(tenant, p))
	}
	bodies, err := IndexedWebhooks.Run(ctx, c, keys).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("webhooks: resolve subscribers of %s: %w", eventType, err)
	}
	list := make([]*WebhookRecord, 0, len(bodies))
	for _, raw := range bodies {
		s, err := ParseWebhookRecord(raw, ring)
		if err != nil || s.Disabled || s.Tenant != tenant {
			continue
		}
		list = append(list, s)
	}
	slices.SortFunc(list, func(a, b *WebhookRecord) int { return strings.Compare(a.ID, b.ID) })
	return list, nil
}

// ReadWebhooks reads the webhooks ids in one round trip (HMGET of the registry): found by id (a
// missing id is left out), and in broken the ids whose record cannot be decoded.
func ReadWebhooks(ctx context.Context, c redis.UniversalClient, k Keys, ring *sealed.Ring, ids []string) (found map[string]*WebhookRecord, broken map[string]error, err error) {
	vals, err := c.HMGet(ctx, k.Webhooks(), ids...).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("webhooks: load webhooks: %w", err)
	}
	found = make(map[string]*WebhookRecord, len(ids))
	for i, v := range vals {
		raw, ok := v.(string)
		if !ok || i >= len(ids) {
			continue
		}
		s, err := ParseWebhookRecord(raw, ring)
		if err != nil {
			if broken == nil {
				broken = map[string]error{}
			}
			broken[ids[i]] = fmt.Errorf("webhooks: decode webhook %s: %w", ids[i], err)
			continue
		}
		found[ids[i]] = s
	}
	return found, broken, nil
}

// ReadTenantWebhooks reads, in one round trip (the IndexedWebhooks script over the tenant's index),
// the stored JSON of every webhook of a tenant (not "").
func ReadTenantWebhooks(ctx context.Context, c redis.UniversalClient, k Keys, tenant string) ([]string, error) {
	return IndexedWebhooks.Run(ctx, c, []string{k.Webhooks(), k.Tenant(tenant)}).StringSlice()
}

// ReadWebhookRecord reads webhook id's stored record; found is false when the registry has none.
func ReadWebhookRecord(ctx context.Context, c redis.UniversalClient, k Keys, id string) (raw string, found bool, err error) {
	raw, err = c.HGet(ctx, k.Webhooks(), id).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return raw, err == nil, err
}

// ReadWebhookRecords reads every stored webhook record of the registry.
func ReadWebhookRecords(ctx context.Context, c redis.UniversalClient, k Keys) ([]string, error) {
	return c.HVals(ctx, k.Webhooks()).Result()
}

// ScanWebhookRecords reads a page of about count stored webhook records from cursor (HSCAN): ids and
// records alternate in kvs; next is 0 when the scan is over.
func ScanWebhookRecords(ctx context.Context, c redis.UniversalClient, k Keys, cursor uint64, count int64) (kvs []string, next uint64, err error) {
	return c.HScan(ctx, k.Webhooks(), cursor, "*", count).Result()
}
