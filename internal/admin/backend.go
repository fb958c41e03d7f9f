// Package admin is the admin API's backend (api.Backend, which internal/api serves as the root's
// Handler and Portal) over the library: every route's scope check (a webhook or delivery of another
// tenant is not found), the portal's tokens (portal_token.go), the state model of the answers
// (view.go), and the operator's reads and actions that the Dispatcher's public methods also offer:
// the backlog (Stats, stats.go; held.go), an endpoint's counts (counts.go), an ordered delivery's
// queue (order_queue.go), a delivery's redeliveries (redeliveries.go), recover (recover.go), retry
// now (retry_now.go) and probe now (probe_now.go). Its Redis reads and writes are internal/rdb's;
// the registry and the Dispatcher's actions are the root's, through the interfaces below.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/eventtypes"
	"github.com/smartdrop/webhooks/internal/index"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// Webhooks is the registry's webhooks, as the root's WebhookRepo offers them.
type Webhooks interface {
	Create(ctx context.Context, w types.Webhook) (*types.Webhook, error)
	Get(ctx context.Context, id string) (*types.Webhook, error)
	List(ctx context.Context) ([]*types.Webhook, error)
	ListTenant(ctx context.Context, tenant string) ([]*types.Webhook, error)
	Delete(ctx context.Context, id string) error
	RotateSecret(ctx context.Context, id string, grace time.Duration) (*types.Webhook, error)
	// Health is a webhook's circuit, "disabled" for a disabled webhook (api.ViewHealth).
	Health(ctx context.Context, id string) (*types.Health, error)
	// Patch replaces a webhook by what apply makes of it, in one read-modify-write of the registry.
	Patch(ctx context.Context, id string, apply func(*types.Webhook) (types.Webhook, error)) (*types.Webhook, error)
	// Stored reads a webhook as the registry stores it (its secrets are not needed, sealed or not).
	Stored(ctx context.Context, id string) (*rdb.WebhookRecord, error)
	// StoredByID reads webhooks by id in one round trip; one gone is not in the map.
	StoredByID(ctx context.Context, ids []string) (map[string]*rdb.WebhookRecord, error)
}

// Deliveries is the delivery records, as the root's DeliveryRepo offers them.
type Deliveries interface {
	Get(ctx context.Context, id string) (*types.Delivery, error)
	Page(ctx context.Context, webhookID string, q types.DeliveryQuery) (*types.DeliveryPage, error)
	Find(ctx context.Context, webhookID, eventID string) (*types.Delivery, error)
	Position(ctx context.Context, deliveryID string) (int, error)
	// Record reads a delivery's record.
	Record(ctx context.Context, id string) (*rdb.Record, error)
}

// EventTypes is the catalog of event types, as the root's EventTypeRepo offers it.
type EventTypes interface {
	List(ctx context.Context) ([]*types.EventType, error)
	Get(ctx context.Context, name string) (*types.EventType, error)
	Create(ctx context.Context, t types.EventType) (*types.EventType, error)
	Delete(ctx context.Context, name string) error
	// Patch changes an event type by apply in one read-modify-write.
	Patch(ctx context.Context, name string, apply func(*types.EventType) error) (*types.EventType, error)
	// Catalog is the process's copy of the catalog (read again once its TTL passed, at once after
	// this process changed it).
	Catalog(ctx context.Context) (*eventtypes.Catalog, error)
}

// Actions are the Dispatcher's public actions that routes call as they are.
type Actions interface {
	SendTest(ctx context.Context, webhookID string) (*types.Delivery, error)
	Redeliver(ctx context.Context, deliveryID string) (*types.Delivery, error)
	ReplayMissingPage(ctx context.Context, webhookID string, since time.Time, cursor string) (types.ReplayPage, error)
	ExpungeTenant(ctx context.Context, tenant string) (int, error)
}

// ExpungeTenant runs one step of a tenant's erasure (DELETE /tenants/{tenant}, operator only).
func (b *Backend) ExpungeTenant(ctx context.Context, tenant string) (int, error) {
	return b.Actions.ExpungeTenant(ctx, tenant)
}

// Backend is the admin API's backend, and the operator's reads and actions of the Dispatcher. Every
// field is set by the Dispatcher that holds it.
type Backend struct {
	Client   redis.UniversalClient
	Keys     rdb.Keys
	LoadKeys func(context.Context) error // reads Keys' layout, as every call's first step does
	Scripts  *rdb.LaneBatcher
	Breaker  *breaker.Breaker
	Index    *index.Reader // the webhooks' indexes of deliveries

	WebhookRepo   Webhooks
	DeliveryRepo  Deliveries
	EventTypeRepo EventTypes
	Actions       Actions

	Now         func() time.Time
	Lease       time.Duration // the attempts' lease: Stats tells leased deliveries from those due within one
	ReplayIndex bool          // Options.ReplayIndex
	// PayloadRetention is Options.PayloadRetention: when an expired payload went.
	PayloadRetention time.Duration
	Traced           bool // Options.Tracer is set: requests carry a traceparent
	UserAgent        string
	PortalKey        []byte // Options.PortalKey: the portal tokens' key
	// ValidTenant checks a tenant name, as the registry does.
	ValidTenant func(string) error
	// Resend is the Dispatcher's Redeliver that also reports whether the call reset the delivery.
	Resend func(ctx context.Context, deliveryID string) (*types.Delivery, bool, error)
	// Woken tells the Dispatcher's worker that probe now made deliveries due in a shard.
	Woken func(shard int)
	// Poke wakes the Dispatcher's worker.
	Poke func()
	// Reshape is the body an attempt sends to wh: its transformation's (Webhook.Transform) of body.
	Reshape func(ctx context.Context, wh *rdb.WebhookRecord, body []byte) ([]byte, bool, error)
	// Preview is the Dispatcher's PreviewTransform.
	Preview func(ctx context.Context, expr string, evt types.Event) (json.RawMessage, error)
}

// PreviewTransform runs a transformation on a sample event (POST /transform/preview).
func (b *Backend) PreviewTransform(ctx context.Context, expr string, evt types.Event) (json.RawMessage, error) {
	out, err := b.Preview(ctx, expr, evt)
	if err != nil && !errors.Is(err, types.ErrInvalidWebhook) && !errors.Is(err, types.ErrInvalidEvent) {
		err = fmt.Errorf("%w: %w", api.ErrBadRequest, err) // it failed on this event: the caller's to change
	}
	return out, err
}

// Classify maps the library's errors to the API's kinds.
func (*Backend) Classify(err error) api.Kind {
	switch {
	case errors.Is(err, types.ErrNotFound):
		return api.KindNotFound
	case errors.Is(err, api.ErrBadRequest), errors.Is(err, types.ErrInvalidWebhook), errors.Is(err, types.ErrInvalidQuery),
		errors.Is(err, types.ErrReplayIndexOff), errors.Is(err, types.ErrInvalidEventType), errors.Is(err, types.ErrInvalidEvent):
		return api.KindBadRequest
	case errors.Is(err, types.ErrConflict):
		return api.KindConflict
	case errors.Is(err, types.ErrWebhookDisabled):
		return api.KindWebhookDisabled
	case errors.Is(err, types.ErrTenantQuota):
		return api.KindTenantQuota
	case errors.Is(err, types.ErrNotRetryable):
		return api.KindNotRetryable
	case errors.Is(err, types.ErrProbeRefused):
		return api.KindProbeRefused
	case errors.Is(err, types.ErrTestSendsLimited), errors.Is(err, types.ErrActionsLimited):
		return api.KindTooMany
	case errors.Is(err, types.ErrEventTypeExists):
		return api.KindExists
	case errors.Is(err, types.ErrPayloadExpired):
		return api.KindPayloadExpired
	}
	return api.KindInternal
}

// Authenticate checks a portal token.
func (b *Backend) Authenticate(token string) (string, error) {
	return ParsePortalToken(b.PortalKey, token, b.Now(), b.ValidTenant)
}

// webhook reads a webhook within a scope: another tenant's answers as not found.
func (b *Backend) webhook(ctx context.Context, s api.Scope, id string) (*types.Webhook, error) {
	wh, err := b.WebhookRepo.Get(ctx, id)
	if err == nil && s.Restricted && wh.Tenant != s.Tenant {
		return nil, fmt.Errorf("%w: webhook %q", types.ErrNotFound, id)
	}
	return wh, err
}

// delivery reads a delivery within a scope: in the portal, only one of its tenant's webhooks.
func (b *Backend) delivery(ctx context.Context, s api.Scope, id string) (*types.Delivery, error) {
	dl, err := b.DeliveryRepo.Get(ctx, id)
	if err != nil || !s.Restricted {
		return dl, err
	}
	if _, err := b.webhook(ctx, s, dl.WebhookID); err != nil {
		return nil, fmt.Errorf("%w: delivery %q", types.ErrNotFound, id)
	}
	return dl, nil
}
