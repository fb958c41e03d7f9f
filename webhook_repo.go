package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/endpoint"
	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/egress"
	"github.com/smartdrop/webhooks/internal/sealed"
	"github.com/smartdrop/webhooks/internal/signing"
	"github.com/smartdrop/webhooks/internal/types"
)

// subscriberCacheTTL bounds how long a process-local view of the registry is used: a registry change
// made by any replica is seen by every replica's Dispatch within this time (at once by the replica
// that made it).
const subscriberCacheTTL = time.Second

// minSecretBytes is the least a caller-supplied secret must decode to.
const minSecretBytes = 24

// maxDescriptionLen bounds Webhook.Description.
const maxDescriptionLen = 1024

// MaxRateLimit bounds Webhook.RateLimit (requests per second).
const MaxRateLimit = 10000

// MaxConcurrencyLimit bounds Webhook.MaxConcurrency.
const MaxConcurrencyLimit = 10000

// Bounds of Webhook.Events. Each pattern is one entry of one more subscription hash, so they bound
// what a webhook costs the registry beyond its own JSON.
const (
	// MaxEventPatterns is the most subscription patterns a webhook may have.
	MaxEventPatterns = 64
	// MaxEventPatternsBytes bounds the total length of a webhook's subscription patterns.
	MaxEventPatternsBytes = 4096
)

// signingKeys returns the keys that sign a request to a webhook at now: the current one, and the
// previous one during a rotation's grace period (v1 and v1a may mix), each parsed once (cache).
func signingKeys(cache *signing.KeyCache, s *storedWebhook, now time.Time) ([]signing.Key, error) {
	if s.Unsealed != nil {
		return nil, s.Unsealed
	}
	cur, err := cache.Parse(s.Secret, now)
	if err != nil {
		return nil, err
	}
	out := []signing.Key{cur}
	if s.PrevSecret != "" && now.UnixMilli() < s.PrevUntil {
		if prev, err := cache.Parse(s.PrevSecret, now); err == nil {
			out = append(out, prev)
		}
	}
	return out, nil
}

// WebhookRepo is the Redis-backed registry of webhooks. Each webhook is stored once by id and, while
// enabled, once more under each of its subscription patterns, so that resolving the subscribers of an
// event type reads a handful of small hashes whatever the number of webhooks.
type WebhookRepo struct {
	circuits   *breaker.Breaker
	quota      int // Options.MaxWebhooksPerTenant
	rdb        redis.UniversalClient
	keys       rdb.Keys
	now        func() time.Time
	policy     egress.Policy
	https      bool
	ring       *sealed.Ring // Options.SecretKeys
	dests      destinations // whose URL schemes webhooks may have
	transforms *transforms  // which compile a webhook's Transform

	mu    sync.Mutex
	cache map[string]subscriberEntry // tenant and event type -> subscribers
	byID  map[string]byIDEntry       // webhook id -> webhook, for the worker
	gen   uint64                     // bumped by every registry change this process makes
}

// maxSaveTries bounds the retries of a read-modify-write that lost a race to another writer.
const maxSaveTries = 8

func (r *WebhookRepo) validate(w *storedWebhook) error {
	if err := r.dests.checkURL(w.URL, r.policy); err != nil {
		return inField("url", err)
	}
	if err := validatePatterns(w.Events); err != nil {
		return inField("events", err)
	}
	if w.RateLimit < 0 || w.RateLimit > MaxRateLimit {
		return inField("rate_limit", fmt.Errorf("%w: rate limit %d is not in [0, %d]", ErrInvalidWebhook, w.RateLimit, MaxRateLimit))
	}
	if w.MaxConcurrency < 0 || w.MaxConcurrency > MaxConcurrencyLimit {
		return inField("max_concurrency", fmt.Errorf("%w: max concurrency %d is not in [0, %d]", ErrInvalidWebhook, w.MaxConcurrency, MaxConcurrencyLimit))
	}
	if len(w.Description) > maxDescriptionLen {
		return inField("description", fmt.Errorf("%w: description longer than %d bytes", ErrInvalidWebhook, maxDescriptionLen))
	}
	if !utf8.ValidString(w.Description) || strings.IndexFunc(w.Description, isControlButSpace) >= 0 {
		return inField("description", fmt.Errorf("%w: description must be UTF-8 text without control characters", ErrInvalidWebhook))
	}
	if err := validateTenant(w.Tenant); err != nil {
		return inField("tenant", err)
	}
	if err := endpoint.ValidateHeaders(w.Headers); err != nil {
		return inField("headers", err)
	}
	if _, err := parseFilter(w.Filter); err != nil {
		return inField("filter", err)
	}
	if w.Transform != "" {
		if _, err := r.transforms.compile(w.Transform); err != nil {
			return inField("transform", err)
		}
	}
	return endpoint.ValidateAuth(w.Auth, w.Headers, r.https, r.policy)
}

// Create registers a webhook. It fills ID, Secret (unless one is given), CreatedAt and UpdatedAt and
// returns the stored webhook, secret included.
func (r *WebhookRepo) Create(ctx context.Context, w Webhook) (*Webhook, error) {
	s := &storedWebhook{Webhook: w}
	s.ID, s.CreatedAt, s.UpdatedAt = "wh_"+randomHex(8), r.now(), r.now()
	stampDisabled(&Webhook{}, &s.Webhook, s.CreatedAt)
	if s.Secret == "" {
		secret, err := signing.NewSecret(webhookScheme(w.Asymmetric))
		if err != nil {
			return nil, err
		}
		s.Secret = secret
	} else if err := validateSigningSecret(s.Secret); err != nil {
		return nil, err
	}
	normalizeWebhook(&s.Webhook)
	if err := r.validate(s); err != nil {
		return nil, err
	}
	if err := r.saveRaw(ctx, s.ID, nil, "", s); err != nil {
		return nil, err
	}
	return s.Public(), nil
}

// Get returns a webhook, secret included, or an error wrapping ErrNotFound.
func (r *WebhookRepo) Get(ctx context.Context, id string) (*Webhook, error) {
	s, _, err := r.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if s.Unsealed != nil {
		return nil, s.Unsealed
	}
	return s.Public(), nil
}

// Update changes a webhook to w, found by w.ID: every field but its ID, Tenant, secret and CreatedAt
// (RotateSecret changes the secret). A URL or secret changed while deliveries are pending applies to
// their next attempt.
func (r *WebhookRepo) Update(ctx context.Context, w Webhook) (*Webhook, error) {
	return r.modify(ctx, w.ID, func(s *storedWebhook) error {
		return r.replace(s, w)
	})
}

// replace puts w in s's place, keeping the fields Update does not change, and validates it.
func (r *WebhookRepo) replace(s *storedWebhook, w Webhook) error {
	types.KeepFields(&w, &s.Webhook)
	s.Webhook = w
	normalizeWebhook(&s.Webhook)
	return r.validate(s)
}

// RotateSecret gives a webhook a new secret. For the grace period after it, every request carries
// signatures by both the old and the new secret, so receivers can switch at their own pace; after it,
// only the new one. It returns the webhook with its new secret.
// A webhook keeps its kind of key: a "whsk_" (v1a) key is replaced by a new one, whose PublicKey the
// receiver needs.
func (r *WebhookRepo) RotateSecret(ctx context.Context, id string, grace time.Duration) (*Webhook, error) {
	return r.modify(ctx, id, func(s *storedWebhook) error {
		secret, err := signing.NewSecret(signing.SchemeOf(s.Secret))
		if err != nil {
			return err
		}
		s.PrevSecret, s.PrevUntil = s.Secret, r.now().Add(max(grace, 0)).UnixMilli()
		s.Secret = secret
		return nil
	})
}

// errUnchanged tells modify that a change had nothing to do.
var errUnchanged = errors.New("webhooks: unchanged")

// disable disables a webhook; it reports whether it was enabled until now.
func (r *WebhookRepo) disable(ctx context.Context, id, reason string) (bool, error) {
	_, err := r.modify(ctx, id, func(s *storedWebhook) error {
		if s.Disabled {
			return errUnchanged
		}
		s.Disabled, s.DisabledReason = true, reason
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return false, nil
	}
	return err == nil, err
}

// Delete removes a webhook. Its pending deliveries fail when next due; its records expire with their
// retention.
func (r *WebhookRepo) Delete(ctx context.Context, id string) error {
	for range maxSaveTries {
		old, raw, err := r.load(ctx, id)
		if err != nil {
			return err
		}
		err = r.saveRaw(ctx, id, old, raw, nil)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err == nil {
			_ = r.circuits.Forget(ctx, id) // its circuit, if it was failing (it does not expire)
		}
		return err
	}
	return fmt.Errorf("webhooks: delete webhook %s: %w", id, ErrConflict)
}

// List returns every registered webhook, of every tenant, secrets included, ordered by creation time
// (ms), then by id.
func (r *WebhookRepo) List(ctx context.Context) ([]*Webhook, error) {
	all, err := rdb.ReadWebhookRecords(ctx, r.rdb, r.keys)
	if err != nil {
		return nil, fmt.Errorf("webhooks: list webhooks: %w", err)
	}
	return r.decodeSorted(all), nil
}

// modify is a read-modify-write of one webhook: change edits a copy of it (and validates what it
// changed), which is saved if no other writer changed the webhook meanwhile (else it is read again).
func (r *WebhookRepo) modify(ctx context.Context, id string, change func(*storedWebhook) error) (*Webhook, error) {
	for range maxSaveTries {
		old, raw, err := r.load(ctx, id)
		if err != nil {
			return nil, err
		}
		if old.Unsealed != nil { // saving it would lose the fields it could not open
			return nil, old.Unsealed
		}
		next := *old
		next.Webhook = *old.Public()
		if err := change(&next); err != nil {
			return nil, err
		}
		next.UpdatedAt = r.now()
		stampDisabled(&old.Webhook, &next.Webhook, next.UpdatedAt)
		normalizeWebhook(&next.Webhook)
		if err := r.saveRaw(ctx, id, old, raw, &next); !errors.Is(err, ErrConflict) {
			if err != nil {
				return nil, err
			}
			return next.Public(), nil
		}
	}
	return nil, fmt.Errorf("webhooks: update webhook %s: %w", id, ErrConflict)
}

func (r *WebhookRepo) load(ctx context.Context, id string) (*storedWebhook, string, error) {
	raw, found, err := rdb.ReadWebhookRecord(ctx, r.rdb, r.keys, id)
	if err != nil {
		return nil, "", fmt.Errorf("webhooks: read webhook %s: %w", id, err)
	}
	if !found {
		return nil, "", fmt.Errorf("%w: webhook %q", ErrNotFound, id)
	}
	s, err := rdb.ParseWebhookRecord(raw, r.ring)
	if err != nil {
		return nil, "", fmt.Errorf("webhooks: decode webhook %s: %w", id, err)
	}
	return s, raw, nil
}

// saveRaw writes next (nil deletes) in place of old, whose stored JSON was raw.
func (r *WebhookRepo) saveRaw(ctx context.Context, id string, old *storedWebhook, raw string, next *storedWebhook) error {
	// The shard count is stored before a keyspace's first webhook, lest the keyspace look written
	// before counts were stored (shards.go).
	if err := loadKeys(ctx, r.keys, r.rdb); err != nil {
		return fmt.Errorf("webhooks: save webhook %s: %w", id, err)
	}
	keys := []string{r.keys.Webhooks(), r.keys.Circuits()}
	tenant := ""
	if old != nil {
		keys, tenant = append(keys, r.subscriptionKeys(old)...), old.Tenant
	}
	nold := len(keys) - 2
	enabled := old != nil && next != nil && old.Disabled && !next.Disabled
	var encoded []byte
	quota := 0
	if next != nil {
		var err error
		if encoded, err = next.Encode(r.ring); err != nil {
			return err
		}
		keys, tenant = append(keys, r.subscriptionKeys(next)...), next.Tenant
		if old == nil && next.Tenant != "" {
			quota = r.quota
		}
	}
	withTenant := 0
	if tenant != "" {
		keys, withTenant = append(keys, r.keys.Tenant(tenant)), 1
	}
	res, err := rdb.SaveWebhook.Run(ctx, r.rdb, keys, id, raw, string(encoded), nold, quota, withTenant, flag(enabled)).Int()
	switch {
	case err != nil:
		return fmt.Errorf("webhooks: save webhook %s: %w", id, err)
	case res == rdb.SaveConflict:
		return ErrConflict
	case res == rdb.SaveOverQuota:
		return fmt.Errorf("%w: tenant %s has %d webhooks, the most Options.MaxWebhooksPerTenant allows", ErrTenantQuota,
			next.Tenant, quota)
	}
	r.invalidate()
	return nil
}

// subscriptionKeys are the subscription hashes that hold a webhook's id while it is enabled: one per
// pattern, in its tenant's index.
func (r *WebhookRepo) subscriptionKeys(s *storedWebhook) []string {
	if s.Disabled {
		return nil
	}
	keys := make([]string, 0, len(s.Events))
	for _, p := range s.Events {
		keys = append(keys, r.keys.TenantSubscribers(s.Tenant, p))
	}
	return keys
}

// isControlButSpace reports whether c is a control character other than tab and line feed.
func isControlButSpace(c rune) bool { return unicode.IsControl(c) && c != '\t' && c != '\n' }

// validatePatterns checks a webhook's subscription patterns: 1 to MaxEventPatterns of them, at most
// MaxEventPatternsBytes together, each valid.
func validatePatterns(ps []string) error {
	if len(ps) == 0 || len(ps) > MaxEventPatterns {
		return fmt.Errorf("%w: %d subscription patterns, 1 to %d are allowed", ErrInvalidWebhook, len(ps), MaxEventPatterns)
	}
	total := 0
	for _, p := range ps {
		if err := validatePattern(p); err != nil {
			return err
		}
		total += len(p)
	}
	if total > MaxEventPatternsBytes {
		return fmt.Errorf("%w: subscription patterns of %d bytes together, at most %d", ErrInvalidWebhook, total,
			MaxEventPatternsBytes)
	}
	return nil
}
