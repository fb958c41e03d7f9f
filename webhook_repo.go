package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// Webhook is a subscriber: a URL that receives the events its Events patterns select.
type Webhook struct {
	ID  string `json:"id"`
	URL string `json:"url"`
	// Secret is the signing secret ("whsec_" + base64). Create fills it.
	Secret      string `json:"secret,omitempty"`
	Description string `json:"description,omitempty"`
	// Events are subscription patterns: an exact type (`pool.created`), a prefix wildcard (`pool.*`,
	// any depth) or `*`.
	Events   []string `json:"events"`
	Disabled bool     `json:"disabled"`
	// RateLimit bounds the requests per second sent to the webhook, by every replica together
	// (inline attempts included): a delivery over the limit waits for the worker, it is not failed.
	// 0 means unlimited; at most MaxRateLimit.
	RateLimit int       `json:"rate_limit,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// String describes a webhook without its secret.
func (w Webhook) String() string {
	return fmt.Sprintf("Webhook{ID:%s URL:%s Events:%v Disabled:%t}", w.ID, w.URL, w.Events, w.Disabled)
}

// GoString is String, so %#v does not print the secret either.
func (w Webhook) GoString() string { return w.String() }

// storedWebhook is a webhook as the registry stores it.
type storedWebhook struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Secret      string   `json:"secret"`
	Description string   `json:"desc,omitempty"`
	Events      []string `json:"events"`
	Disabled    bool     `json:"off,omitempty"`
	RateLimit   int      `json:"rl,omitempty"`
	Created     int64    `json:"c"`
	Updated     int64    `json:"u"`
	// PrevSecret still signs requests, beside Secret, until PrevUntil (ms): secret rotation.
	PrevSecret string `json:"ps,omitempty"`
	PrevUntil  int64  `json:"pu,omitempty"`
}

func (s *storedWebhook) webhook() *Webhook {
	return &Webhook{ID: s.ID, URL: s.URL, Secret: s.Secret, Description: s.Description, Events: slices.Clone(s.Events),
		Disabled: s.Disabled, RateLimit: s.RateLimit, CreatedAt: time.UnixMilli(s.Created), UpdatedAt: time.UnixMilli(s.Updated)}
}

// secrets returns the decoded secrets that sign a request at now: the current one, and the previous one
// during a rotation's grace period.
func (s *storedWebhook) secrets(now time.Time) ([][]byte, error) {
	cur, err := decodeSecret(s.Secret)
	if err != nil {
		return nil, err
	}
	out := [][]byte{cur}
	if s.PrevSecret != "" && now.UnixMilli() < s.PrevUntil {
		if prev, err := decodeSecret(s.PrevSecret); err == nil {
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
	rdb      redis.UniversalClient
	keys     keyspace
	now      func() time.Time
	policy   egressPolicy
	https    bool

	mu    sync.Mutex
	cache map[string]subscriberEntry // event type -> subscribers
	gen   uint64                     // bumped by every registry change this process makes
}

type subscriberEntry struct {
	at   time.Time
	list []*storedWebhook
}

// saveWebhookScript replaces a webhook in the registry, conditional on the stored JSON being what the
// caller read (the token of this read-modify-write).
//
// KEYS[1] -> {P:registry}:webhooks
// KEYS[2..1+ARGV[4]] -> subscriber hashes the webhook leaves (its old patterns)
// KEYS[2+ARGV[4]..] -> subscriber hashes the webhook joins (its new patterns, when enabled)
// ARGV[1] -> webhook id
// ARGV[2] -> expected stored JSON ("" when the webhook must not exist yet)
// ARGV[3] -> new JSON ("" deletes the webhook)
// ARGV[4] -> number of old subscriber keys
// returns 1 when saved, 0 when the stored JSON was not the expected one
var saveWebhookScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if (cur or '') ~= ARGV[2] then return 0 end
local nold = tonumber(ARGV[4])
for i = 2, 1 + nold do redis.call('HDEL', KEYS[i], ARGV[1]) end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 1
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
for i = 2 + nold, #KEYS do redis.call('HSET', KEYS[i], ARGV[1], ARGV[3]) end
return 1
`)

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
	return nil
}

// Create registers a webhook. It fills ID, Secret (unless one is given), CreatedAt and UpdatedAt and
// returns the stored webhook, secret included.
func (r *WebhookRepo) Create(ctx context.Context, w Webhook) (*Webhook, error) {
	now := r.now()
	s := &storedWebhook{ID: "wh_" + randomHex(8), URL: w.URL, Secret: w.Secret, Description: w.Description,
		Events: compactPatterns(w.Events), Disabled: w.Disabled, RateLimit: w.RateLimit, Created: now.UnixMilli(), Updated: now.UnixMilli()}
	if s.Secret == "" {
		secret, err := newSecret()
		if err != nil {
			return nil, err
		}
		s.Secret = secret
	} else if raw, err := decodeSecret(s.Secret); err != nil || len(raw) < minSecretBytes {
		return nil, fmt.Errorf("%w: secret must be whsec_ followed by the base64 of at least %d bytes", ErrInvalidWebhook, minSecretBytes)
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

// Update changes a webhook's URL, Events, Description, Disabled and RateLimit, found by w.ID. A URL or secret
// changed while deliveries are pending applies to their next attempt.
func (r *WebhookRepo) Update(ctx context.Context, w Webhook) (*Webhook, error) {
	return r.modify(ctx, w.ID, func(s *storedWebhook) error {
		s.URL, s.Events, s.Description, s.Disabled = w.URL, compactPatterns(w.Events), w.Description, w.Disabled
		s.RateLimit = w.RateLimit
		return r.validate(s)
	})
}

// RotateSecret gives a webhook a new secret. For the grace period after it, every request carries
// signatures by both the old and the new secret, so receivers can switch at their own pace; after it,
// only the new one. It returns the webhook with its new secret.
func (r *WebhookRepo) RotateSecret(ctx context.Context, id string, grace time.Duration) (*Webhook, error) {
	secret, err := newSecret()
	if err != nil {
		return nil, err
	}
	return r.modify(ctx, id, func(s *storedWebhook) error {
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
			r.forgetHealth(ctx, id)
		}
		return err
	}
	return fmt.Errorf("webhooks: delete webhook %s: %w", id, ErrConflict)
}

// forgetHealth drops a deleted webhook's health entries (best effort: they expire with Retention).
func (r *WebhookRepo) forgetHealth(ctx context.Context, id string) {
	pipe := r.rdb.Pipeline()
	for s := range r.keys.shards {
		pipe.HDel(ctx, r.keys.healthKey(s), id+":ok", id+":fail")
	}
	_, _ = pipe.Exec(ctx)
}

// List returns every registered webhook, secrets included, ordered by creation time (ms), then by id.
func (r *WebhookRepo) List(ctx context.Context) ([]*Webhook, error) {
	all, err := r.rdb.HVals(ctx, r.keys.webhooksKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("webhooks: list webhooks: %w", err)
	}
	out := make([]*Webhook, 0, len(all))
	for _, raw := range all {
		var s storedWebhook
		if json.Unmarshal([]byte(raw), &s) == nil {
			out = append(out, s.webhook())
		}
	}
	slices.SortFunc(out, func(a, b *Webhook) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
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
	keys := []string{r.keys.webhooksKey()}
	var nold int
	if old != nil && !old.Disabled {
		for _, p := range old.Events {
			keys = append(keys, r.keys.subscribersKey(p))
		}
		nold = len(old.Events)
	}
	var encoded []byte
	if next != nil {
		var err error
		if encoded, err = json.Marshal(next); err != nil {
			return fmt.Errorf("webhooks: encode webhook: %w", err)
		}
		if !next.Disabled {
			for _, p := range next.Events {
				keys = append(keys, r.keys.subscribersKey(p))
			}
		}
	}
	ok, err := saveWebhookScript.Run(ctx, r.rdb, keys, id, raw, string(encoded), nold).Int()
	if err != nil {
		return fmt.Errorf("webhooks: save webhook %s: %w", id, err)
	}
	if ok == 0 {
		return ErrConflict
	}
	r.invalidate()
	return nil
}

func (r *WebhookRepo) invalidate() {
	r.mu.Lock()
	clear(r.cache)
	r.gen++
	r.mu.Unlock()
}

// subscribers returns the enabled webhooks whose patterns select eventType, from a process-local cache
// at most subscriberCacheTTL old, otherwise with one round trip.
func (r *WebhookRepo) subscribers(ctx context.Context, eventType string) ([]*storedWebhook, error) {
	now := time.Now()
	r.mu.Lock()
	e, ok := r.cache[eventType]
	gen := r.gen
	r.mu.Unlock()
	if ok && now.Sub(e.at) < subscriberCacheTTL {
		return e.list, nil
	}
	patterns := patternsFor(eventType)
	pipe := r.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(patterns))
	for i, p := range patterns {
		cmds[i] = pipe.HGetAll(ctx, r.keys.subscribersKey(p))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("webhooks: resolve subscribers of %s: %w", eventType, err)
	}
	seen := map[string]bool{}
	var list []*storedWebhook
	for _, cmd := range cmds {
		for id, raw := range cmd.Val() {
			if seen[id] {
				continue
			}
			var s storedWebhook
			if err := json.Unmarshal([]byte(raw), &s); err != nil || s.Disabled {
				continue
			}
			seen[id] = true
			list = append(list, &s)
		}
	}
	slices.SortFunc(list, func(a, b *storedWebhook) int { return strings.Compare(a.ID, b.ID) })
	r.mu.Lock()
	if len(r.cache) > 4096 {
		clear(r.cache) // bounded: event types are few, but callers choose them
	}
	if r.gen == gen { // a change made meanwhile by this process may postdate what was read
		r.cache[eventType] = subscriberEntry{at: now, list: list}
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
		var s storedWebhook
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			if broken == nil {
				broken = map[string]error{}
			}
			broken[ids[i]] = fmt.Errorf("webhooks: decode webhook %s: %w", ids[i], err)
			continue
		}
		found[ids[i]] = &s
	}
	return found, broken
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
