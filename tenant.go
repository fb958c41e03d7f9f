package webhooks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// Tenants: a webhook belongs to at most one tenant (Webhook.Tenant), and an event reaches only the
// webhooks of its own tenant (Event.Tenant). The registry keeps, per tenant, its own subscription
// hashes and an index of its webhooks, so resolving an event's subscribers reads only its tenant's
// patterns, whatever the number of tenants:
//
//	{P:registry}:sub:<pattern>             hash  webhooks with no tenant subscribed to pattern (enabled): id -> ""
//	{P:registry}:t:<tenant>:sub:<pattern>  hash  the tenant's webhooks subscribed to pattern (enabled): id -> ""
//	{P:registry}:t:<tenant>:all            hash  every webhook of the tenant: id -> ""
//
// Each webhook's JSON is stored once, in {P:registry}:webhooks; the index hashes hold its id (builds
// before this one stored its JSON there: only the ids are read).
//
// Event ids are scoped by tenant: two tenants' "evt_1" are two events, with two bodies and their own
// shards (scopedEventID).

// MaxTenantLen bounds a tenant name.
const MaxTenantLen = 64

// DefaultMaxWebhooksPerTenant is Options.MaxWebhooksPerTenant's default.
const DefaultMaxWebhooksPerTenant = 100

// validateTenant checks a tenant name: "" or 1–MaxTenantLen bytes of [A-Za-z0-9_.-], but not "." or
// ".." (which a path or a key joined with the name would read as a directory).
func validateTenant(t string) error {
	if len(t) > MaxTenantLen {
		return fmt.Errorf("%w: tenant longer than %d bytes", ErrInvalidWebhook, MaxTenantLen)
	}
	if t == "." || t == ".." {
		return fmt.Errorf("%w: tenant %q is not a name", ErrInvalidWebhook, t)
	}
	for _, c := range []byte(t) {
		if !isNameByte(c) && c != '.' {
			return fmt.Errorf("%w: tenant %q may hold only [A-Za-z0-9_.-]", ErrInvalidWebhook, t)
		}
	}
	return nil
}

// ListTenant returns the webhooks of one tenant, secrets included, ordered like List. With tenant ""
// it returns the webhooks with no tenant.
func (r *WebhookRepo) ListTenant(ctx context.Context, tenant string) ([]*Webhook, error) {
	if err := validateTenant(tenant); err != nil {
		return nil, err
	}
	if tenant == "" {
		all, err := r.List(ctx)
		if err != nil {
			return nil, err
		}
		return slices.DeleteFunc(all, func(w *Webhook) bool { return w.Tenant != "" }), nil
	}
	vals, err := rdb.ReadTenantWebhooks(ctx, r.rdb, r.keys, tenant)
	if err != nil {
		return nil, fmt.Errorf("webhooks: list webhooks of tenant %s: %w", tenant, err)
	}
	return r.decodeSorted(vals), nil
}

// DeleteTenant deletes every webhook of a tenant and returns how many it deleted. Their pending
// deliveries fail when next due; their records expire with their retention.
func (r *WebhookRepo) DeleteTenant(ctx context.Context, tenant string) (int, error) {
	if tenant == "" {
		return 0, fmt.Errorf("%w: DeleteTenant needs a tenant", ErrInvalidWebhook)
	}
	hooks, err := r.ListTenant(ctx, tenant)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, w := range hooks {
		if err := r.Delete(ctx, w.ID); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// decodeSorted decodes stored webhooks, skipping any that cannot be decoded, ordered by creation
// time (ms), then by id.
func (r *WebhookRepo) decodeSorted(vals []string) []*Webhook {
	out := make([]*Webhook, 0, len(vals))
	for _, raw := range vals {
		if s, err := rdb.ParseWebhookRecord(raw, r.ring); err == nil {
			out = append(out, s.Public())
		}
	}
	slices.SortFunc(out, func(a, b *Webhook) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}
