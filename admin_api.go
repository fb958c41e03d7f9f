package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/smartdrop/webhooks/internal/admin"
	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/eventtypes"
	"github.com/smartdrop/webhooks/internal/rdb"
)

// Bounds and defaults of the admin API's requests.
const (
	// MaxRequestBody bounds the body of a request to Handler or Portal; a larger one gets 413.
	MaxRequestBody = api.MaxRequestBody
	// DefaultRotationGrace is how long a rotated secret keeps signing when a rotate-secret request does
	// not say.
	DefaultRotationGrace = api.DefaultRotationGrace
	// MaxRotationGrace is the longest grace period a rotate-secret request may ask for.
	MaxRotationGrace = api.MaxRotationGrace
)

// UIContentSecurityPolicy is the Content-Security-Policy sent with every answer of the web UI's
// routes (/ui and /ui/…, on Handler and Portal): no inline script or style, nothing from another
// origin, no framing.
const UIContentSecurityPolicy = api.UIContentSecurityPolicy

// Handler returns the admin JSON API of the dispatcher as an http.Handler. It has no authentication or
// authorization of its own: mount it behind your own (it creates webhooks, reveals their secrets on
// create and rotate, and re-sends deliveries). Its routes are relative to where it is mounted; to serve
// it under a prefix, strip the prefix:
//
//	mux.Handle("/admin/", http.StripPrefix("/admin", requireOperator(d.Handler())))
//
// A webhook travels as the JSON of Webhook. Custom header values are write-only: every answer lists
// each header with the value "" (set, value withheld), and a PATCH that gives a header the value ""
// keeps the value it has. The secret is in the answers of create and rotate-secret only, and of GET
// …/secret.
//
// Routes (request bodies are JSON, at most 64 KiB; every response is application/json):
//
//	POST   /webhooks                     create, body: a Webhook's JSON without id, secret, public_key,
//	                                     created_at and updated_at -> 201, the webhook with its secret
//	GET    /webhooks                     ?tenant=T (optional: one tenant's, "" for none's)
//	                                     -> 200, {"webhooks": [...]}, secrets omitted
//	GET    /webhooks/{id}                -> 200, the webhook, secret omitted
//	PATCH  /webhooks/{id}                each field present replaces the webhook's, null clears it (url,
//	                                     events, description, disabled, rate_limit, headers, filter)
//	                                     -> 200, the webhook, secret omitted
//	DELETE /webhooks/{id}                -> 204
//	POST   /webhooks/{id}/test           SendTest -> 201, the test delivery as its attempt left it; 202, the
//	                                     delivery pending, when the attempt was left to the worker (ErrDeferred)
//	POST   /webhooks/{id}/rotate-secret  RotateSecret, optional body {"grace_seconds": N} (0 to 30 days,
//	                                     default 24h) -> 200, the webhook with its new secret
//	GET    /webhooks/{id}/deliveries     Page, ?status=pending|success|failed&limit=N&cursor=C (limit 1 or
//	                                     more, default 50, at most 500) -> 200, {"deliveries": [...],
//	                                     "next_cursor": C}, newest first, without attempt history; no
//	                                     next_cursor on the last page
//	POST   /webhooks/{id}/recover        Recover, ?since=T&until=T&limit=N (RFC 3339; since required, until
//	                                     default now; limit 1 or more, default 100, at most 1000)
//	                                     -> 200, {"redelivered": n}
//	POST   /webhooks/{id}/replay         ReplayMissingPage, body {"since": T, "cursor": C} (RFC 3339; cursor
//	                                     optional: the next_cursor of the previous answer) -> 200,
//	                                     {"scheduled": n, "next_cursor": C}, no next_cursor once complete;
//	                                     400 without Options.ReplayIndex
//	GET    /webhooks/{id}/secret         -> 200, {"secret": S, "public_key": K}: the signing secret (and,
//	                                     for an ed25519 webhook, the key receivers verify with)
//	GET    /webhooks/{id}/health         Health -> 200, the circuit: {state, consecutive_failures, ...}
//	GET    /webhooks/{id}/stats          -> 200, {"hours": [{"hour", "success", "failed", "skipped"}, ...]}:
//	                                     attempts per hour by outcome, and deliveries skipped by the
//	                                     transformation, the last 24 hours, oldest first
//	GET    /webhooks/{id}/counts         -> 200, {"pending", "parked", "failed", "examined"}: deliveries scheduled
//	                                     for an attempt, those of them waiting for the open circuit's probe,
//	                                     and the failed ones among the newest examined (at most 100)
//	GET    /deliveries/{id}              -> 200, the delivery with its attempt history and "redelivered_at":
//	                                     when it was redelivered, as far as its webhook's index shows;
//	                                     once its payload is gone (Options.PayloadRetention),
//	                                     "payload_expired_at" and "payload_expired": "payload expired on …"
//	GET    /deliveries/{id}/queue        -> 200, {"order_key", "length", "deliveries": [...]}: the deliveries of
//	                                     an ordered delivery's (webhook, order key), head first (at most 50,
//	                                     without history); 400 for a delivery with no order key
//	GET    /deliveries/{id}/request      -> 200, {"method", "url", "headers": [{"name", "value", "source"}]}:
//	                                     the request rebuilt (not stored): fixed and latest-attempt values;
//	                                     signatures, the endpoint's header values and credentials withheld
//	POST   /deliveries/{id}/redeliver    Redeliver -> 200, the delivery (unchanged unless it was failed);
//	                                     202 when the attempt was left to the worker (ErrDeferred); 409
//	                                     payload_expired once its payload is gone (ErrPayloadExpired).
//	                                     Repeated or concurrent calls re-send it once
//	POST   /deliveries/{id}/retry        a pending delivery due now (the next worker attempts it) -> 200, the
//	                                     delivery; 409 not_retryable when not pending, in flight, held back
//	                                     behind an earlier delivery of its order key, or its webhook paused
//	GET    /deliveries/{id}/payload      -> 200, {"payload": the body the delivery sends, null once expired,
//	                                     with "payload_expired_at" and "payload_expired" as above}
//	GET    /deliveries                   ?id=I&status=S&event_type=T&from=F&to=U&limit=N: across webhooks
//	                                     (see MaxSearchWebhooks), I a delivery id or an event id; F
//	                                     and U (RFC 3339, each optional) bound when they were created;
//	                                     without I, the newest N (default 50, at most 500) of each webhook
//	                                     listed by U, filtered -> 200, {"deliveries": [...]}, newest
//	                                     first, at most N
//	GET    /backlog                      Stats -> 200, {"due", "scheduled", "leased", ...}; operator only
//	POST   /webhooks/{id}/probe          probe now: an open circuit's wait ends and its parked deliveries
//	                                     are due (up to 256 per shard), so the next worker pass sends the
//	                                     probe -> 200, {"circuit": Health, "deliveries_due": n}; 409
//	                                     probe_refused when the circuit is closed or its probe in flight,
//	                                     409 webhook_disabled for a disabled webhook; operator only
//	DELETE /tenants/{tenant}             ExpungeTenant: one bounded step of the tenant's erasure -> 200,
//	                                     {"removed": n}; call again until n is 0; operator only
//	GET    /event-types                  -> 200, {"event_types": [...]}: the catalog of event types, by name
//	POST   /event-types                  EventTypeRepo.Create, body: an EventType's JSON -> 201, the type; 400
//	                                     naming the field (name, schema, examples, description); 409 exists
//	                                     for a name taken; operator only
//	GET    /event-types/{name}           -> 200, the type
//	PATCH  /event-types/{name}           each field present replaces the type's, null clears it (description,
//	                                     schema, examples, deprecated) -> 200, the type; operator only
//	DELETE /event-types/{name}           -> 204; operator only
//	GET    /event-types/openapi.json     the catalog as an OpenAPI 3.1 document: a webhooks entry per type
//	GET    /openapi.json                 the OpenAPI 3.1 document of these routes (internal/api/openapi.json)
//	GET    /ui/                          the web UI (HTML, JS and CSS embedded in the library), which
//	                                     calls the routes above
//
// Errors are {"error": {"code": ..., "message": ...}}, with "field" (the webhook's JSON field) when a 400
// is about one field:
//
//	400 invalid_request     malformed JSON, unknown fields, a missing body, an invalid webhook, a bad
//	                        status, limit, cursor, since, until, from, to or grace_seconds; the queue of
//	                        a delivery with no order key
//	404 not_found           an unknown webhook or delivery id, or no such route
//	405 method_not_allowed  a known route with another method (the Allow header lists the methods)
//	409 conflict            a registry change lost repeated races with others; retry
//	409 exists              a create of an event type whose name the catalog holds
//	409 webhook_disabled    redeliver of a delivery whose webhook is disabled; enable it first
//	409 tenant_quota        a create over Options.MaxWebhooksPerTenant
//	409 not_retryable       a retry of a delivery that cannot be made due now
//	409 probe_refused       a probe now of a webhook whose circuit is closed, or whose probe is in flight
//	409 payload_expired     redeliver of a delivery whose payload is gone (Options.PayloadRetention)
//	413 too_large           a request body over 64 KiB
//	500 internal            anything else; the cause is logged to Options.Logger, never sent
func (d *Dispatcher) Handler() http.Handler { return api.NewHandler(d.admin, d.log) }

// Portal returns the tenant-scoped admin API: the routes of Handler, each restricted to the tenant
// named by the request's token (from PortalToken), sent as "Authorization: Bearer <token>". Another
// tenant's webhook or delivery answers 404, as if it did not exist; a missing, malformed, tampered,
// expired or otherwise-keyed token answers 401 on every route but the UI's; a tenant cannot set or
// change its tenant (a "tenant" field is refused with 400) nor its quota. Errors have Handler's JSON
// shape. Unlike Handler, Portal may face the tenant's own users directly. Its /ui/ serves the web
// UI's static files without a token (the request is routed first, and only the UI's routes skip the
// token); open it at /ui/#token=<token> (the fragment never reaches the server). It serves /openapi.json
// without a token too, and not the operator-only GET /backlog and POST /webhooks/{id}/probe.
func (d *Dispatcher) Portal() http.Handler { return api.NewPortal(d.admin, d.log) }

// newAdmin is the admin API's backend of d (internal/admin), and the reads and actions of its Stats,
// RetryNow and ProbeNow.
func newAdmin(d *Dispatcher) *admin.Backend {
	return &admin.Backend{Client: d.rdb, Keys: d.keys, LoadKeys: func(ctx context.Context) error { return loadKeys(ctx, d.keys, d.rdb) },
		Scripts: d.scripts, Breaker: d.breaker, Index: d.deliveries.indexes(),
		WebhookRepo: webhookStore{d.webhooks}, DeliveryRepo: adminDeliveries{d.deliveries}, EventTypeRepo: adminEventTypes{d.eventTypes},
		Actions: d, Now: func() time.Time { return d.now() }, Lease: d.lease,
		ReplayIndex: d.opts.ReplayIndex, PayloadRetention: d.opts.PayloadRetention, Traced: d.opts.Tracer != nil, UserAgent: userAgent,
		PortalKey: d.opts.PortalKey, ValidTenant: validateTenant,
		Resend: func(ctx context.Context, id string) (*Delivery, bool, error) {
			return d.resend.Redeliver(ctx, id, false)
		}, Woken: func(shard int) { d.leaser.MarkShard(shard) }, Poke: d.wake.Poke,
		Reshape: d.transforms.reshape, Preview: d.PreviewTransform}
}

// webhookStore is the registry as internal/admin and internal/notify read and change it.
type webhookStore struct{ *WebhookRepo }

// Patch replaces a webhook by what apply makes of it, in one read-modify-write of the registry.
func (r webhookStore) Patch(ctx context.Context, id string, apply func(*Webhook) (Webhook, error)) (*Webhook, error) {
	return r.modify(ctx, id, func(sw *storedWebhook) error {
		next, err := apply(sw.Public())
		if err != nil {
			return err
		}
		return r.replace(sw, next)
	})
}

// Stored reads a webhook as stored.
func (r webhookStore) Stored(ctx context.Context, id string) (*storedWebhook, error) {
	s, _, err := r.load(ctx, id)
	return s, err
}

// StoredByID reads webhooks as stored, by id.
func (r webhookStore) StoredByID(ctx context.Context, ids []string) (map[string]*storedWebhook, error) {
	found, _, err := r.byIDs(ctx, ids)
	return found, err
}

// Disable disables a webhook for a reason, and reports whether it changed it.
func (r webhookStore) Disable(ctx context.Context, id, reason string) (bool, error) {
	return r.disable(ctx, id, reason)
}

// adminDeliveries is the delivery records as internal/admin reads them.
type adminDeliveries struct{ *DeliveryRepo }

// Record reads a delivery's record.
func (r adminDeliveries) Record(ctx context.Context, id string) (*rdb.Record, error) {
	return r.get(ctx, id)
}

// adminEventTypes is the catalog as internal/admin reads and changes it.
type adminEventTypes struct{ *EventTypeRepo }

// Catalog is the process's copy of the catalog, as Dispatch reads it.
func (r adminEventTypes) Catalog(ctx context.Context) (*eventtypes.Catalog, error) {
	cat, err := r.cache.Get(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("webhooks: list event types: %w", err)
	}
	return cat, nil
}

// Patch changes an event type by apply in one read-modify-write.
func (r adminEventTypes) Patch(ctx context.Context, name string, apply func(*EventType) error) (*EventType, error) {
	return r.modify(ctx, name, apply)
}
