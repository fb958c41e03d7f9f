package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
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

// Webhook is a subscriber: a URL that receives the events its Events patterns select, among the events
// of its Tenant.
type Webhook struct {
	ID string `json:"id"`
	// Tenant is the customer the webhook belongs to: it receives only events of that tenant (an event
	// with no tenant reaches only webhooks with none). "" means no tenant. Set at Create, never changed;
	// at most MaxTenantLen bytes of [A-Za-z0-9_.-].
	Tenant string `json:"tenant,omitempty"`
	URL    string `json:"url"`
	// Secret is the signing secret: "whsec_" + base64 (Standard Webhooks v1, HMAC-SHA256), or "whsk_"
	// + base64 (v1a, an ed25519 private key; receivers get PublicKey). Create fills it, of the kind
	// Asymmetric asks for, unless one is given.
	Secret string `json:"secret,omitempty"`
	// PublicKey is the "whpk_" key receivers verify v1a signatures with, when Secret is a "whsk_" key.
	PublicKey string `json:"public_key,omitempty"`
	// Asymmetric asks Create for an ed25519 (v1a) key when no Secret is given.
	Asymmetric  bool   `json:"asymmetric,omitempty"`
	Description string `json:"description,omitempty"`
	// Events are subscription patterns: an exact type (`pool.created`), a prefix wildcard (`pool.*`,
	// any depth) or `*`.
	Events   []string `json:"events"`
	Disabled bool     `json:"disabled"`
	// RateLimit bounds the requests per second sent to the webhook, by every replica together
	// (inline attempts included): a delivery over the limit waits for the worker, it is not failed.
	// 0 means unlimited; at most MaxRateLimit.
	RateLimit int `json:"rate_limit,omitempty"`
	// Headers are extra request headers sent with every attempt, e.g. a receiver's own auth token.
	// Names the library sets or that control the connection are refused (see ReservedHeaders); at
	// most MaxHeaders, each value at most MaxHeaderValueLen bytes with no line break. Never logged.
	Headers map[string]string `json:"headers,omitempty"`
	// Filter is an optional JSON filter over the event ({"type": …, "data": …}); an event it does not
	// match gets no delivery to this webhook (nothing is claimed). nil matches every event. See
	// the package doc's "Filters" for the operators.
	Filter    json.RawMessage `json:"filter,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// String describes a webhook without its secret.
func (w Webhook) String() string {
	return fmt.Sprintf("Webhook{ID:%s Tenant:%s URL:%s Events:%v Disabled:%t}", w.ID, w.Tenant, w.URL, w.Events, w.Disabled)
}

// GoString is String, so %#v does not print the secret either.
func (w Webhook) GoString() string { return w.String() }

// storedWebhook is a webhook as the registry stores it.
type storedWebhook struct {
	ID          string            `json:"id"`
	Tenant      string            `json:"t,omitempty"`
	URL         string            `json:"url"`
	Secret      string            `json:"secret"`
	Description string            `json:"desc,omitempty"`
	Events      []string          `json:"events"`
	Disabled    bool              `json:"off,omitempty"`
	RateLimit   int               `json:"rl,omitempty"`
	Headers     map[string]string `json:"h,omitempty"`
	Filter      json.RawMessage   `json:"f,omitempty"`
	Created     int64             `json:"c"`
	Updated     int64             `json:"u"`
	// PrevSecret still signs requests, beside Secret, until PrevUntil (ms): secret rotation.
	PrevSecret string `json:"ps,omitempty"`
	PrevUntil  int64  `json:"pu,omitempty"`
}

func (s *storedWebhook) webhook() *Webhook {
	w := &Webhook{ID: s.ID, Tenant: s.Tenant, URL: s.URL, Secret: s.Secret, Description: s.Description,
		Events: slices.Clone(s.Events), Disabled: s.Disabled, RateLimit: s.RateLimit, Headers: maps.Clone(s.Headers),
		Filter: slices.Clone(s.Filter), CreatedAt: time.UnixMilli(s.Created), UpdatedAt: time.UnixMilli(s.Updated)}
	if pk, err := PublicKey(s.Secret); err == nil {
		w.PublicKey = pk
	}
	return w
}

// secrets returns the keys that sign a request at now: the current one, and the previous one during a
// rotation's grace period (v1 and v1a may mix).
func (s *storedWebhook) secrets(now time.Time) ([]signingKey, error) {
	cur, err := parseSigningKey(s.Secret)
	if err != nil {
		return nil, err
	}
	out := []signingKey{cur}
	if s.PrevSecret != "" && now.UnixMilli() < s.PrevUntil {
		if prev, err := parseSigningKey(s.PrevSecret); err == nil {
			out = append(out, prev)
		}
	}
	return out, nil
}

// WebhookRepo is the Redis-backed registry of webhooks. Each webhook is stored once by id and, while
// enabled, once more under each of its subscription patterns, so that resolving the subscribers of an
// event type reads a handful of small hashes whatever the number of webhooks.
type WebhookRepo struct {
	circuits *circuitStore
	quota    int // Options.MaxWebhooksPerTenant
	rdb      redis.UniversalClient
	keys     keyspace
	now      func() time.Time
	policy   egressPolicy
	https    bool

	mu    sync.Mutex
	cache map[string]subscriberEntry // tenant and event type -> subscribers
	byID  map[string]byIDEntry       // webhook id -> webhook, for the worker
	gen   uint64                     // bumped by every registry change this process makes
}

// saveWebhookScript replaces a webhook in the registry, conditional on the stored JSON being what the
// caller read (the token of this read-modify-write). The tenant's index is one more hash the webhook
// leaves and joins; a new webhook of a tenant is refused when the index already holds the quota.
//
// KEYS[1] -> {P:registry}:webhooks
// KEYS[2..1+ARGV[4]] -> hashes the webhook leaves (its old patterns' subscriber hashes, its tenant index)
// KEYS[2+ARGV[4]..] -> hashes the webhook joins (its new patterns', when enabled; its tenant index last)
// ARGV[1] -> webhook id
// ARGV[2] -> expected stored JSON ("" when the webhook must not exist yet)
// ARGV[3] -> new JSON ("" deletes the webhook)
// ARGV[4] -> number of keys left
// ARGV[5] -> the quota of webhooks per tenant, checked when creating ("0": none)
// returns saveDone when saved, saveConflict when the stored JSON was not the expected one, saveOverQuota
// when a new webhook would exceed its tenant's quota
var saveWebhookScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if (cur or '') ~= ARGV[2] then return ` + strconv.Itoa(saveConflict) + ` end
if ARGV[2] == '' and ARGV[5] ~= '0' and redis.call('HLEN', KEYS[#KEYS]) >= tonumber(ARGV[5]) then
  return ` + strconv.Itoa(saveOverQuota) + `
end
local nold = tonumber(ARGV[4])
for i = 2, 1 + nold do redis.call('HDEL', KEYS[i], ARGV[1]) end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 1
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
for i = 2 + nold, #KEYS do redis.call('HSET', KEYS[i], ARGV[1], ARGV[3]) end
return ` + strconv.Itoa(saveDone) + `
`)

// saveWebhookScript's replies.
const (
	saveConflict  = 0
	saveDone      = 1
	saveOverQuota = 2
)

// maxSaveTries bounds the retries of a read-modify-write that lost a race to another writer.
const maxSaveTries = 8

func (r *WebhookRepo) validate(w *storedWebhook) error {
	if err := validateWebhookURL(w.URL, r.https, r.policy); err != nil {
		return err
	}
	if len(w.Events) == 0 {
		return fmt.Errorf("%w: at least one subscription pattern is required", ErrInvalidWebhook)
	}
	for _, p := range w.Events {
		if err := validatePattern(p); err != nil {
			return err
		}
	}
	if w.RateLimit < 0 || w.RateLimit > MaxRateLimit {
		return fmt.Errorf("%w: rate limit %d is not in [0, %d]", ErrInvalidWebhook, w.RateLimit, MaxRateLimit)
	}
	if len(w.Description) > maxDescriptionLen {
		return fmt.Errorf("%w: description longer than %d bytes", ErrInvalidWebhook, maxDescriptionLen)
	}
	if err := validateTenant(w.Tenant); err != nil {
		return err
	}
	if err := validateHeaders(w.Headers); err != nil {
		return err
	}
	if _, err := parseFilter(w.Filter); err != nil {
		return err
	}
	return nil
}

// Create registers a webhook. It fills ID, Secret (unless one is given), CreatedAt and UpdatedAt and
// returns the stored webhook, secret included.
func (r *WebhookRepo) Create(ctx context.Context, w Webhook) (*Webhook, error) {
	now := r.now()
	s := &storedWebhook{ID: "wh_" + randomHex(8), Tenant: w.Tenant, URL: w.URL, Secret: w.Secret,
		Description: w.Description, Events: compactPatterns(w.Events), Disabled: w.Disabled, RateLimit: w.RateLimit,
		Headers: canonicalHeaders(w.Headers), Filter: compactFilter(w.Filter), Created: now.UnixMilli(), Updated: now.UnixMilli()}
	if s.Secret == "" {
		secret, err := newSigningSecret(w.Asymmetric)
		if err != nil {
			return nil, err
		}
		s.Secret = secret
	} else if err := validateSigningSecret(s.Secret); err != nil {
		return nil, err
	}
	if err := r.validate(s); err != nil {
		return nil, err
	}
	if err := r.saveRaw(ctx, s.ID, nil, "", s); err != nil {
		return nil, err
	}
	return s.webhook(), nil
}

// Get returns a webhook, secret included, or an error wrapping ErrNotFound.
func (r *WebhookRepo) Get(ctx context.Context, id string) (*Webhook, error) {
	s, _, err := r.load(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.webhook(), nil
}

// Update changes a webhook's URL, Events, Description, Disabled, RateLimit, Headers and Filter, found by
// w.ID; its Tenant and secret stay (RotateSecret changes the secret). A URL or secret changed while
// deliveries are pending applies to their next attempt.
func (r *WebhookRepo) Update(ctx context.Context, w Webhook) (*Webhook, error) {
	return r.modify(ctx, w.ID, func(s *storedWebhook) error {
		s.URL, s.Events, s.Description, s.Disabled = w.URL, compactPatterns(w.Events), w.Description, w.Disabled
		s.RateLimit, s.Headers, s.Filter = w.RateLimit, canonicalHeaders(w.Headers), compactFilter(w.Filter)
		return r.validate(s)
	})
}

// RotateSecret gives a webhook a new secret. For the grace period after it, every request carries
// signatures by both the old and the new secret, so receivers can switch at their own pace; after it,
// only the new one. It returns the webhook with its new secret.
// A webhook keeps its kind of key: a "whsk_" (v1a) key is replaced by a new one, whose PublicKey the
// receiver needs.
func (r *WebhookRepo) RotateSecret(ctx context.Context, id string, grace time.Duration) (*Webhook, error) {
	return r.modify(ctx, id, func(s *storedWebhook) error {
		secret, err := newSigningSecret(isPrivateKey(s.Secret))
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
func (r *WebhookRepo) disable(ctx context.Context, id string) (bool, error) {
	_, err := r.modify(ctx, id, func(s *storedWebhook) error {
		if s.Disabled {
			return errUnchanged
		}
		s.Disabled = true
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
			_ = r.circuits.forget(ctx, id) // its circuit, if it was failing (it does not expire)
		}
		return err
	}
	return fmt.Errorf("webhooks: delete webhook %s: %w", id, ErrConflict)
}

// List returns every registered webhook, of every tenant, secrets included, ordered by creation time
// (ms), then by id.
func (r *WebhookRepo) List(ctx context.Context) ([]*Webhook, error) {
	all, err := r.rdb.HVals(ctx, r.keys.webhooksKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("webhooks: list webhooks: %w", err)
	}
	return decodeSorted(all), nil
}

func (r *WebhookRepo) modify(ctx context.Context, id string, change func(*storedWebhook) error) (*Webhook, error) {
	for range maxSaveTries {
		old, raw, err := r.load(ctx, id)
		if err != nil {
			return nil, err
		}
		next := *old
		next.Events = slices.Clone(old.Events)
		if err := change(&next); err != nil {
			return nil, err
		}
		next.Updated = r.now().UnixMilli()
		if err := r.saveRaw(ctx, id, old, raw, &next); !errors.Is(err, ErrConflict) {
			if err != nil {
				return nil, err
			}
			return next.webhook(), nil
		}
	}
	return nil, fmt.Errorf("webhooks: update webhook %s: %w", id, ErrConflict)
}

func (r *WebhookRepo) load(ctx context.Context, id string) (*storedWebhook, string, error) {
	raw, err := r.rdb.HGet(ctx, r.keys.webhooksKey(), id).Result()
	if errors.Is(err, redis.Nil) {
		return nil, "", fmt.Errorf("%w: webhook %q", ErrNotFound, id)
	}
	if err != nil {
		return nil, "", fmt.Errorf("webhooks: read webhook %s: %w", id, err)
	}
	var s storedWebhook
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return nil, "", fmt.Errorf("webhooks: decode webhook %s: %w", id, err)
	}
	return &s, raw, nil
}

// saveRaw writes next (nil deletes) in place of old, whose stored JSON was raw.
func (r *WebhookRepo) saveRaw(ctx context.Context, id string, old *storedWebhook, raw string, next *storedWebhook) error {
	// The shard count is stored before a keyspace's first webhook, lest the keyspace look written
	// before counts were stored (shards.go).
	if err := r.keys.load(ctx, r.rdb); err != nil {
		return fmt.Errorf("webhooks: save webhook %s: %w", id, err)
	}
	keys := []string{r.keys.webhooksKey()}
	if old != nil {
		keys = append(keys, r.indexKeys(old)...)
	}
	nold := len(keys) - 1
	var encoded []byte
	quota := 0
	if next != nil {
		var err error
		if encoded, err = json.Marshal(next); err != nil {
			return fmt.Errorf("webhooks: encode webhook: %w", err)
		}
		keys = append(keys, r.indexKeys(next)...)
		if old == nil && next.Tenant != "" {
			quota = r.quota
		}
	}
	res, err := saveWebhookScript.Run(ctx, r.rdb, keys, id, raw, string(encoded), nold, quota).Int()
	switch {
	case err != nil:
		return fmt.Errorf("webhooks: save webhook %s: %w", id, err)
	case res == saveConflict:
		return ErrConflict
	case res == saveOverQuota:
		return fmt.Errorf("%w: tenant %s has %d webhooks, the most Options.MaxWebhooksPerTenant allows", ErrTenantQuota,
			next.Tenant, quota)
	}
	r.invalidate()
	return nil
}

// indexKeys are the hashes that hold a webhook besides the registry: its patterns' subscriber hashes
// while it is enabled, then its tenant's index (a tenant's webhooks only).
func (r *WebhookRepo) indexKeys(s *storedWebhook) []string {
	var keys []string
	if !s.Disabled {
		for _, p := range s.Events {
			keys = append(keys, r.keys.tenantSubscribersKey(s.Tenant, p))
		}
	}
	if s.Tenant != "" {
		keys = append(keys, r.keys.tenantKey(s.Tenant))
	}
	return keys
}

// compactPatterns drops duplicate patterns, keeping order.
func compactPatterns(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// compactFilter is a filter as stored: nil for none (empty or JSON null), otherwise compacted (a filter
// that is not JSON is kept as given, for validate to refuse).
func compactFilter(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return slices.Clone(raw)
	}
	return b.Bytes()
}
