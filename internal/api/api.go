// Package api is the admin and portal HTTP API of the webhooks library and its web UI: routing,
// request parameters, authentication of portal requests, the error envelope and the embedded UI
// files; the JSON of every request and answer (a webhook's create and PATCH bodies, its view with
// credentials withheld, the answers about deliveries). What the routes read and change is behind
// Backend, which the root package implements over its repositories: it takes and returns the shared
// types of internal/types and the answers of answers.go, never JSON.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/smartdrop/webhooks/internal/types"
)

// Bounds and defaults of requests (the root package exports them under the same names).
const (
	// MaxRequestBody bounds the body of a request; a larger one gets 413.
	MaxRequestBody = 64 << 10
	// DefaultRotationGrace is how long a rotated secret keeps signing when a rotate-secret request
	// does not say.
	DefaultRotationGrace = 24 * time.Hour
	// MaxRotationGrace is the longest grace period a rotate-secret request may ask for.
	MaxRotationGrace = 30 * 24 * time.Hour
)

// Scope is whose webhooks a request may reach: every tenant's (the zero value, the operator's API),
// or only Tenant's when Restricted (the portal, or the operator's list of one tenant; Tenant "" is
// then the webhooks of no tenant).
type Scope struct {
	Tenant     string
	Restricted bool
}

// DeliveryQuery selects a page of a webhook's deliveries (the root's DeliveryQuery).
type DeliveryQuery struct {
	Status, Cursor string
	Limit          int // 0: the default
}

// DeliverySearch selects deliveries across the scope's webhooks (GET /deliveries).
type DeliverySearch struct {
	// ID is a delivery id or an event id ("": every delivery); Status and EventType filter exactly.
	ID, Status, EventType string
	// From and To keep deliveries created in [From, To] (zero: unbounded).
	From, To time.Time
	Limit    int // 0: the default
	// Cursor continues a search without an ID where the answer that gave it (next_cursor) stopped.
	Cursor string
}

// Backend is what the API reads and changes, in the shared types (internal/types) and the answers
// of answers.go; the API decodes requests and encodes answers itself. A webhook or delivery outside
// the scope is an error Classify calls KindNotFound. SendTest and Redeliver return the delivery with
// an error wrapping types.ErrDeferred when its attempt was left to a worker (the answer is then 202).
type Backend interface {
	// CreateWebhook registers w (its tenant already the scope's) and returns it, secret included.
	CreateWebhook(ctx context.Context, w types.Webhook) (*types.Webhook, error)
	ListWebhooks(ctx context.Context, s Scope) ([]*types.Webhook, error)
	// GetWebhook returns a webhook, secret and credentials included (the API withholds them).
	GetWebhook(ctx context.Context, s Scope, id string) (*types.Webhook, error)
	// PatchWebhook replaces a webhook by what apply makes of it (a copy, credentials included), in one
	// read-modify-write of the registry, so concurrent patches of different fields all apply.
	PatchWebhook(ctx context.Context, s Scope, id string, apply func(cur *types.Webhook) (types.Webhook, error)) (*types.Webhook, error)
	DeleteWebhook(ctx context.Context, s Scope, id string) error
	SendTest(ctx context.Context, s Scope, id string) (*types.Delivery, error)
	// RotateSecret gives a webhook a new secret and returns it, secret included.
	RotateSecret(ctx context.Context, s Scope, id string, grace time.Duration) (*types.Webhook, error)
	// Health is a webhook's circuit as the API answers it: "disabled" for a disabled webhook.
	Health(ctx context.Context, s Scope, id string) (*types.Health, error)
	// Stats are a webhook's attempts per hour by outcome, the last 24 hours, oldest first.
	Stats(ctx context.Context, s Scope, id string) ([]types.HourStats, error)
	// Counts are a webhook's pending, parked and recently failed deliveries.
	Counts(ctx context.Context, s Scope, id string) (Counts, error)
	Deliveries(ctx context.Context, s Scope, id string, q DeliveryQuery) (*DeliveryPage, error)
	// Recover re-sends a webhook's failed deliveries from since until until (zero: now).
	Recover(ctx context.Context, s Scope, id string, since, until time.Time, limit int) (int, error)
	// Replay sends a webhook the events of its tenant it missed since since, one page from cursor.
	Replay(ctx context.Context, s Scope, id string, since time.Time, cursor string) (scheduled int, next string, err error)
	Delivery(ctx context.Context, s Scope, id string) (*DeliveryDetail, error)
	Redeliver(ctx context.Context, s Scope, id string) (*types.Delivery, error)
	// RetryNow makes a pending delivery due now.
	RetryNow(ctx context.Context, s Scope, id string) (*types.Delivery, error)
	// ProbeNow ends a webhook's open circuit's wait: its probe goes out with the next worker pass (an
	// operator-only route).
	ProbeNow(ctx context.Context, s Scope, id string) (*ProbeAnswer, error)
	// Payload is the body a delivery sends (nil, or not JSON, once expired: PayloadGone says when);
	// Transformed says it is the event as its webhook's transformation reshapes it now.
	Payload(ctx context.Context, s Scope, id string) (*PayloadView, error)
	// Request is the request a delivery sends, rebuilt: its headers, the values of secret ones withheld.
	Request(ctx context.Context, s Scope, id string) (*DeliveryRequest, error)
	// OrderQueue is the queue of an ordered delivery's (webhook, order key), head first.
	OrderQueue(ctx context.Context, s Scope, id string) (*OrderQueue, error)
	// SearchDeliveries finds deliveries across the scope's webhooks, newest first (q.Status is "",
	// pending, success or failed).
	SearchDeliveries(ctx context.Context, s Scope, q DeliverySearch) (*SearchPage, error)
	// Backlog is the delivery backlog of every tenant (an operator-only route).
	Backlog(ctx context.Context) (*Backlog, error)
	// EventTypesAnswer is what build makes of the catalog of event types by name (the operator's, one
	// for every tenant: the portal reads it, and changes nothing), made once per version of the
	// catalog and kind, from the process's copy of the catalog: GET /event-types and its OpenAPI
	// document neither read nor decode nor encode the catalog per request.
	EventTypesAnswer(ctx context.Context, kind string, build func([]types.EventType) ([]byte, error)) ([]byte, error)
	// ExpungeTenant removes one bounded step of a tenant's data and says how much it removed, 0 once
	// nothing is left (an operator-only route).
	ExpungeTenant(ctx context.Context, tenant string) (int, error)
	GetEventType(ctx context.Context, name string) (*types.EventType, error)
	CreateEventType(ctx context.Context, t types.EventType) (*types.EventType, error)
	// PatchEventType changes an event type by apply (a copy) in one read-modify-write.
	PatchEventType(ctx context.Context, name string, apply func(cur *types.EventType) error) (*types.EventType, error)
	DeleteEventType(ctx context.Context, name string) error
	// PreviewTransform runs a transformation on an event: the data a webhook with it would receive,
	// or null when it skips the event.
	PreviewTransform(ctx context.Context, expr string, evt types.Event) (json.RawMessage, error)
	// Authenticate checks a portal token and returns its tenant.
	Authenticate(token string) (tenant string, err error)
	// Classify says how to answer an error a Backend method returned.
	Classify(err error) Kind
}

// Kind is how an error is answered.
type Kind int

// Kinds of errors.
const (
	KindInternal        Kind = iota // 500 internal; the cause is logged, never sent
	KindBadRequest                  // 400 invalid_request
	KindNotFound                    // 404 not_found
	KindConflict                    // 409 conflict: lost repeated races; retry
	KindWebhookDisabled             // 409 webhook_disabled
	KindTenantQuota                 // 409 tenant_quota
	KindNotRetryable                // 409 not_retryable: not pending, in flight, held back or paused
	KindProbeRefused                // 409 probe_refused: the circuit is closed, or its probe in flight
	KindTooMany                     // 429 too_many_requests: try again later (the message says when)
	KindExists                      // 409 exists: the name is taken (an event type's)
	KindPayloadExpired              // 409 payload_expired: the delivery's payload is gone (Options.PayloadRetention)
)

// ErrBadRequest marks a request the API cannot use (a parameter, a body, a field it may not set); it
// is answered 400 invalid_request with its message, without asking Classify.
var ErrBadRequest = errors.New("invalid request")

// NewHandler returns the operator's API: every route, every tenant.
func NewHandler(b Backend, log *slog.Logger) http.Handler { return newRouter(b, log, false) }

// NewPortal returns the tenant portal: the routes of NewHandler, each restricted to the tenant of the
// request's bearer token, less the operator-only ones. A request the router sends to the UI's files or
// to the OpenAPI document is served without a token; every other request needs a valid one, else 401.
func NewPortal(b Backend, log *slog.Logger) http.Handler {
	rt := newRouter(b, log, true)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := rt.publicRoute(r); ok {
			h.ServeHTTP(w, r) // no data: every API call the UI makes needs the token
			return
		}
		if !guard(w, r) {
			return
		}
		tenant, err := authenticate(b, r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="webhooks portal"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "a valid portal token is required")
			return
		}
		rt.serve(w, r, Scope{Tenant: tenant, Restricted: true})
	})
}

// authenticate reads the request's "Authorization: Bearer <token>" and returns its tenant.
func authenticate(b Backend, r *http.Request) (string, error) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "", errors.New("no bearer token")
	}
	return b.Authenticate(strings.TrimSpace(token))
}
