package rdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Keys builds every key of one key prefix (P in the schema comment, schema.go). The registry's keys
// need only the prefix; the event shards' keys need the prefix's Layout, which the first Load reads
// from Redis (storing it on first use). Copies of a Keys share the layout.
type Keys struct {
	prefix   string
	registry string // RegistryTag, built once
	*lazyLayout
}

// lazyLayout is a prefix's Layout, read once by Load.
type lazyLayout struct {
	Layout // read only after Load (or of a layout built whole, KeysOf)

	want   int // the shard count asked for: 0 for whatever is stored
	fresh  int // the shard count stored in a new prefix
	loaded atomic.Bool
	mu     sync.Mutex // held by the load in progress
}

// ErrShardCount is Load's error for a prefix that holds another shard count than the one asked for.
var ErrShardCount = errors.New("the key prefix holds another shard count (fixed once used)")

// NewKeys is the Keys of prefix, its layout read by the first Load: want shards (0 for whatever is
// stored, defaultShards in a new prefix). It does no I/O.
func NewKeys(prefix string, want, defaultShards int) Keys {
	fresh := want
	if fresh == 0 {
		fresh = defaultShards
	}
	return Keys{prefix: prefix, registry: registryTag(prefix), lazyLayout: &lazyLayout{want: want, fresh: fresh}}
}

// KeysOf is the Keys of prefix with a layout of shards shards, built whole (no Load needed).
func KeysOf(prefix string, shards int) Keys {
	l := &lazyLayout{Layout: NewLayout(prefix, shards), want: shards}
	l.loaded.Store(true)
	return Keys{prefix: prefix, registry: registryTag(prefix), lazyLayout: l}
}

// Prefix is the key prefix.
func (k Keys) Prefix() string { return k.prefix }

// Load reads the prefix's shard count on client (storing it on first use: the count asked for, else
// the default NewKeys was given) unless it has been read: one round trip per Keys, by the first call
// that needs it, with that call's context. A failed read is tried again by the next call. A stored
// count that differs from the one asked for wraps ErrShardCount.
func (k Keys) Load(ctx context.Context, client redis.UniversalClient) error {
	if k.loaded.Load() {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.loaded.Load() {
		return nil
	}
	v, err := ShardCount.Run(ctx, client, []string{k.ShardCount()}, FormatCount(k.fresh)).Text()
	if err != nil {
		return fmt.Errorf("webhooks: read the keyspace's shard count: %w", err)
	}
	shards, err := ParseCount(v)
	if err != nil {
		return err
	}
	if k.want != 0 && k.want != shards {
		return fmt.Errorf("%w: asked for %d, key prefix %q holds %d", ErrShardCount, k.want, k.prefix, shards)
	}
	k.Layout = NewLayout(k.prefix, shards)
	k.loaded.Store(true)
	return nil
}

// ScopedEventID is the id under which an event of a tenant is stored and sharded: the event id itself
// for no tenant, else the tenant and the id joined by a NUL byte, which no event id can hold (ids are
// printable), so no two tenants' ids, nor a tenant's and a tenantless one, meet.
func ScopedEventID(tenant, eventID string) string {
	if tenant == "" {
		return eventID
	}
	return tenant + "\x00" + eventID
}

// SplitScopedEventID is the tenant and the event id of an event id scoped by its tenant
// (ScopedEventID): a tenant never holds the NUL byte that joins them.
func SplitScopedEventID(scoped string) (tenant, eventID string) {
	if t, id, ok := strings.Cut(scoped, "\x00"); ok {
		return t, id
	}
	return "", scoped
}

// OrderShard is the shard of every delivery of an ordered event: its (tenant, order key)'s.
func (k Keys) OrderShard(tenant, orderKey string) int {
	return k.ShardOf(ScopedEventID(tenant, orderKey))
}

// EventShard is the shard of an event's deliveries: its (tenant, order key)'s when ordered, else its
// scoped id's.
func (k Keys) EventShard(tenant, scoped, orderKey string) int {
	if orderKey != "" {
		return k.OrderShard(tenant, orderKey)
	}
	return k.ShardOf(scoped)
}

// OrderedDeliveryID is the id of an ordered (webhook, event) pair's delivery: in the key's shard, with
// the pair's hash.
func (k Keys) OrderedDeliveryID(shard int, webhookID, scopedEventID string) string {
	return IndexedID(shard, IndexedHash(k.DeliveryID(webhookID, scopedEventID)))
}

// Delivery is a pair's claim and delivery record.
func (k Keys) Delivery(shard int, deliveryID string) string {
	return k.Tag(shard) + ":rec:" + DeliveryHash(deliveryID)
}

// Event is an unordered event's stored fingerprint and body, or an ordered event's marker.
func (k Keys) Event(shard int, scopedEventID string) string {
	return k.Tag(shard) + ":evt:" + scopedEventID
}

// OrderedEvent holds an ordered event's request body, in its key's shard.
func (k Keys) OrderedEvent(shard int, scopedEventID string) string {
	return k.Tag(shard) + ":oevt:" + scopedEventID
}

// Ready is a shard's schedule of webhooks: webhook id -> when its earliest delivery in the shard is
// due (ms), or later while the webhook is parked.
func (k Keys) Ready(shard int) string { return k.Tag(shard) + ":ready" }

// Queue is a webhook's schedule in a shard: delivery id -> next attempt or lease end (ms).
func (k Keys) Queue(shard int, webhookID string) string { return k.Tag(shard) + ":q:" + webhookID }

// Index is a webhook's per-shard index of its deliveries, a stream.
func (k Keys) Index(shard int, webhookID string) string { return k.Tag(shard) + ":list:" + webhookID }

// TenantIndex is a tenant's per-shard index of its webhooks' deliveries, a stream of the same entries
// as Index's: a portal's search reads one per shard, however many webhooks the tenant has. The
// webhooks of no tenant have none.
func (k Keys) TenantIndex(shard int, tenant string) string { return k.Tag(shard) + ":tlist:" + tenant }

// Inline is a shard's schedule of the deliveries leased for an inline attempt: InlineEntry -> lease
// end (ms). A worker takes an entry whose lease ended into its webhook's queue.
func (k Keys) Inline(shard int) string { return k.Tag(shard) + ":inline" }

// Seq is the list of a (webhook, order key)'s deliveries in claim order.
func (k Keys) Seq(shard int, webhookID, orderKey string) string {
	return k.Tag(shard) + ":seq:" + webhookID + ":" + orderKey
}

// Blocked is a shard's zset of sequences with deliveries waiting behind their head.
func (k Keys) Blocked(shard int) string { return k.Tag(shard) + ":blocked" }

// BlockedMember is an order key's sequence as a member of its shard's blocked zset (Keys.Blocked).
func BlockedMember(webhookID, orderKey string) string { return webhookID + ":" + orderKey }

// Replay is a tenant's replay index in a shard: event id (unscoped) -> accepted (ms). The webhooks of
// no tenant have the key without a tenant part.
func (k Keys) Replay(shard int, tenant string) string {
	if tenant == "" {
		return k.Tag(shard) + ":tevents"
	}
	return k.Tag(shard) + ":tevents:" + tenant
}

// RegistryTag is the hash tag every registry key shares.
func (k Keys) RegistryTag() string { return k.registry }

// registryTag is the RegistryTag of prefix.
func registryTag(prefix string) string { return "{" + prefix + ":registry}" }

// Webhooks is the hash of every webhook: id -> webhook JSON.
func (k Keys) Webhooks() string { return k.RegistryTag() + ":webhooks" }

// EventTypes is the catalog of event types: name -> event type JSON.
func (k Keys) EventTypes() string { return k.RegistryTag() + ":event_types" }

// EventTypesVersion holds the catalog's version, a random token replaced by every change of it.
func (k Keys) EventTypesVersion() string { return k.RegistryTag() + ":event_types:version" }

// Subscribers is the subscription hash of a pattern, of the webhooks with no tenant.
func (k Keys) Subscribers(pattern string) string { return k.RegistryTag() + ":sub:" + pattern }

// TenantSubscribers is a tenant's subscription hash of a pattern.
func (k Keys) TenantSubscribers(tenant, pattern string) string {
	if tenant == "" {
		return k.Subscribers(pattern)
	}
	return k.RegistryTag() + ":t:" + tenant + ":sub:" + pattern
}

// Tenant is the index of a tenant's webhooks ("" for none: webhooks with no tenant are listed by
// List and filtered).
func (k Keys) Tenant(tenant string) string { return k.RegistryTag() + ":t:" + tenant + ":all" }

// Circuits is the hash of the circuits: field webhook id -> encoded circuit. It needs no TTL: a success
// deletes the webhook's field, and deleting a webhook its field.
func (k Keys) Circuits() string { return k.RegistryTag() + ":circuits" }

// Hourly is a webhook's hourly attempt counters.
func (k Keys) Hourly(webhookID string) string { return k.RegistryTag() + ":hourly:" + webhookID }

// ShardCount holds the prefix's shard count.
func (k Keys) ShardCount() string { return k.RegistryTag() + ":shards" }

// Rate is a webhook's rate limiter: its own hash tag, so each webhook's limiter is one slot of a
// cluster, apart from the shards.
func (k Keys) Rate(webhookID string) string { return "{" + k.prefix + ":rate:" + webhookID + "}" }

// Concurrency holds the slots of a webhook's MaxConcurrency: its own hash tag, as a rate limiter's.
func (k Keys) Concurrency(webhookID string) string {
	return "{" + k.prefix + ":concurrency:" + webhookID + "}"
}

// TenantLimiter is a tenant's limiter of an action (internal/ratelimit's Action: "tests" for
// SendTest, "resends", "retries", "probes"; tenant "" for the webhooks of no tenant, which count as one
// tenant): a hash tag of its own, which the same action's limiters of the tenant's webhooks share, so
// that one script takes a slot of both (the TakeBoth script).
func (k Keys) TenantLimiter(action, tenant string) string {
	return "{" + k.prefix + ":" + action + ":tenant:" + tenant + "}"
}

// WebhookLimiter is a webhook's limiter of an action, in its tenant's hash tag (TenantLimiter): a
// webhook's tenant never changes, so neither does its limiter's key.
func (k Keys) WebhookLimiter(action, tenant, webhookID string) string {
	return k.TenantLimiter(action, tenant) + ":webhook:" + webhookID
}

// The actions a tenant's limiters bound (TenantLimiter), each internal/ratelimit's Action of that Key.
const (
	ActionTests   = "tests"   // SendTest
	ActionResends = "resends" // Redeliver
	ActionRetries = "retries" // RetryNow
	ActionProbes  = "probes"  // ProbeNow
)

// LimitedActions lists every action of a tenant's limiters: ExpungeStep removes them all.
var LimitedActions = []string{ActionTests, ActionResends, ActionRetries, ActionProbes}

// TenantTestSends is a tenant's test-send limiter (SendTest): TenantLimiter(ActionTests, tenant).
func (k Keys) TenantTestSends(tenant string) string { return k.TenantLimiter(ActionTests, tenant) }

// WebhookTestSends is a webhook's test-send limiter: WebhookLimiter(ActionTests, tenant, webhookID).
func (k Keys) WebhookTestSends(tenant, webhookID string) string {
	return k.WebhookLimiter(ActionTests, tenant, webhookID)
}

// FailedCount counts a webhook's deliveries that failed for good in the window of time starting at
// windowStart (ms): its own hash tag, which the webhook's windows share (the CountFailed script reads two).
func (k Keys) FailedCount(webhookID string, windowStart int64) string {
	return "{" + k.prefix + ":ops:" + webhookID + "}:failed:" + strconv.FormatInt(windowStart, 10)
}

// Token is the webhook's cached OAuth2 token: "<expiry ms> <credentials fingerprint> <token>", sealed
// when the library's secret keys are set.
func (k Keys) Token(webhookID string) string { return "{" + k.prefix + ":oauth:" + webhookID + "}" }

// TokenLock is held (a random token, SET NX PX) by the one replica fetching the webhook's token.
func (k Keys) TokenLock(webhookID string) string { return k.Token(webhookID) + ":lock" }
