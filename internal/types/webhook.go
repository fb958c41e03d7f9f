package types

import (
	"encoding/json"
	"fmt"
	"time"
)

// A subscriber.

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
	// DisabledReason says why Disabled is set, in words: the rule that disabled the webhook ("every
	// attempt failed for 40h10m6s", "the endpoint answered 410 Gone"), the reason a caller gave when it
	// disabled it, or "disabled by an operator". Kept while the webhook stays disabled, cleared when it
	// is enabled again.
	DisabledReason string `json:"disabled_reason,omitempty"`
	// DisabledAt is when the webhook was disabled; zero while it is enabled. Set by the library.
	DisabledAt time.Time `json:"disabled_at,omitzero"`
	// RateLimit bounds the requests per second sent to the webhook, by every replica together
	// (inline attempts included): a delivery over the limit waits for the worker, it is not failed.
	// 0 means unlimited; at most MaxRateLimit.
	RateLimit int `json:"rate_limit,omitempty"`
	// MaxConcurrency bounds the attempts to the webhook in flight at once, by every replica together
	// (inline attempts included), for receivers that take only so many requests at a time: an attempt
	// over it waits for the worker, it is not failed. A slot is held for the attempt's lease at most,
	// so a crashed replica's slots come back when their leases end. 0 means no limit beyond the
	// engine's own protection, per process (a share of Options.Concurrency; see its doc); at most
	// MaxConcurrencyLimit.
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// Headers are extra request headers sent with every attempt, e.g. a receiver's own auth token.
	// Names the library sets or that control the connection are refused (see ReservedHeaders); at
	// most MaxHeaders, each value at most MaxHeaderValueLen bytes with no line break. Never logged.
	Headers map[string]string `json:"headers,omitempty"`
	// Filter is an optional JSON filter over the event ({"type": …, "data": …}); an event it does not
	// match gets no delivery to this webhook (nothing is claimed). nil matches every event. See
	// the package doc's "Filters" for the operators.
	Filter json.RawMessage `json:"filter,omitempty"`
	// Transform is an optional CEL expression over the event that reshapes what is sent: `event` holds
	// id, type, time (RFC 3339), tenant and data; a map or list it gives becomes the body's "data", and
	// null skips the event for this webhook (its delivery is recorded as skipped, nothing is sent). It is
	// compiled and type-checked when the webhook is saved (an error names its line and column), and
	// each evaluation is bounded by Options.MaxTransformCost; a runtime error fails the delivery, in
	// words, without a retry. At most 4 KiB. "" sends the event as it is. See docs/transformations.md.
	Transform string `json:"transform,omitempty"`
	// Auth is how attempts authenticate to the endpoint (basic, bearer, OAuth2 client credentials or a
	// TLS client certificate); nil sends no credentials. See EndpointAuth.
	Auth      *EndpointAuth `json:"auth,omitempty"`
	CreatedAt time.Time     `json:"created_at"`
	UpdatedAt time.Time     `json:"updated_at"`
}

// String describes a webhook without its secret.
func (w Webhook) String() string {
	return fmt.Sprintf("Webhook{ID:%s Tenant:%s URL:%s Events:%v Disabled:%t}", w.ID, w.Tenant, w.URL, w.Events, w.Disabled)
}

// GoString is String, so %#v does not print the secret either.
func (w Webhook) GoString() string { return w.String() }
