// Package api is the admin and portal HTTP API of the webhooks library and its web UI: routing,
// request parameters, authentication of portal requests, the error envelope and the embedded UI
// files. What the routes read and change is behind Backend, which the root package implements with
// its one codec of webhooks: requests and answers cross it as JSON bytes.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"
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

// Backend is what the API reads and changes. Bodies are JSON; a webhook or delivery outside the
// scope is an error Classify calls KindNotFound. Deferred is true when an attempt was left to a
// worker (the answer is then 202).
type Backend interface {
	CreateWebhook(ctx context.Context, s Scope, body []byte) ([]byte, error)
	ListWebhooks(ctx context.Context, s Scope) ([]byte, error)
	GetWebhook(ctx context.Context, s Scope, id string) ([]byte, error)
	PatchWebhook(ctx context.Context, s Scope, id string, patch []byte) ([]byte, error)
	DeleteWebhook(ctx context.Context, s Scope, id string) error
	SendTest(ctx context.Context, s Scope, id string) (body []byte, deferred bool, err error)
	RotateSecret(ctx context.Context, s Scope, id string, grace time.Duration) ([]byte, error)
	Secret(ctx context.Context, s Scope, id string) ([]byte, error)
	Health(ctx context.Context, s Scope, id string) ([]byte, error)
	Stats(ctx context.Context, s Scope, id string) ([]byte, error)
	// Counts are a webhook's pending, parked and recently failed deliveries.
	Counts(ctx context.Context, s Scope, id string) ([]byte, error)
	Deliveries(ctx context.Context, s Scope, id string, q DeliveryQuery) ([]byte, error)
	// Recover re-sends a webhook's failed deliveries from since until until (zero: now).
	Recover(ctx context.Context, s Scope, id string, since, until time.Time, limit int) (int, error)
	// Replay sends a webhook the events of its tenant it missed since since, one page from cursor.
	Replay(ctx context.Context, s Scope, id string, since time.Time, cursor string) (scheduled int, next string, err error)
	Delivery(ctx context.Context, s Scope, id string) ([]byte, error)
	Redeliver(ctx context.Context, s Scope, id string) (body []byte, deferred bool, err error)
	// RetryNow makes a pending delivery due now; Payload is the body a delivery sends, {"payload": …}.
	RetryNow(ctx context.Context, s Scope, id string) ([]byte, error)
	// ProbeNow ends a webhook's open circuit's wait: its probe goes out with the next worker pass (an
	// operator-only route).
	ProbeNow(ctx context.Context, s Scope, id string) ([]byte, error)
	Payload(ctx context.Context, s Scope, id string) ([]byte, error)
	// Request is the request a delivery sends, rebuilt: its headers, the values of secret ones withheld.
	Request(ctx context.Context, s Scope, id string) ([]byte, error)
	// OrderQueue is the queue of an ordered delivery's (webhook, order key), head first.
	OrderQueue(ctx context.Context, s Scope, id string) ([]byte, error)
	// SearchDeliveries finds deliveries across the scope's webhooks, newest first.
	SearchDeliveries(ctx context.Context, s Scope, q DeliverySearch) ([]byte, error)
	// Backlog is the delivery backlog of every tenant (an operator-only route).
	Backlog(ctx context.Context) ([]byte, error)
	// ListEventTypes is the catalog of event types, {"event_types": [...]} by name: the operator's, one
	// for every tenant (the portal reads it, and changes nothing).
	ListEventTypes(ctx context.Context) ([]byte, error)
	GetEventType(ctx context.Context, name string) ([]byte, error)
	CreateEventType(ctx context.Context, body []byte) ([]byte, error)
	// PatchEventType replaces each field the patch holds (null clears it).
	PatchEventType(ctx context.Context, name string, patch []byte) ([]byte, error)
	DeleteEventType(ctx context.Context, name string) error
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
)

// errBadRequest marks a request parameter the API cannot use.
var errBadRequest = errors.New("invalid request")

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
