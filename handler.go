package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

const (
	// MaxRequestBody bounds the body of a request to Handler; a larger one gets 413.
	MaxRequestBody = 64 << 10
	// DefaultRotationGrace is how long a rotated secret keeps signing when a rotate-secret request does
	// not say.
	DefaultRotationGrace = 24 * time.Hour
	// MaxRotationGrace is the longest grace period a rotate-secret request may ask for.
	MaxRotationGrace = 30 * 24 * time.Hour
)

// errBadRequest marks a request the handler cannot use: bad JSON, a bad parameter.
var errBadRequest = errors.New("invalid request")

// Handler returns the admin JSON API of the dispatcher as an http.Handler. It has no authentication or
// authorization of its own: mount it behind your own (it creates webhooks, reveals their secrets on
// create and rotate, and re-sends deliveries). Its routes are relative to where it is mounted; to serve
// it under a prefix, strip the prefix:
//
//	mux.Handle("/admin/", http.StripPrefix("/admin", requireOperator(d.Handler())))
//
// Routes (request bodies are JSON, at most 64 KiB; every response is application/json):
//
//	POST   /webhooks                     create, body {url, events, description, disabled}
//	                                     -> 201, the webhook with its secret
//	GET    /webhooks                     -> 200, {"webhooks": [...]}, secrets omitted
//	GET    /webhooks/{id}                -> 200, the webhook, secret omitted
//	PATCH  /webhooks/{id}                change the fields present of {url, events, description, disabled}
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
//	GET    /webhooks/{id}/secret         -> 200, {"secret": S, "public_key": K}: the signing secret (and,
//	                                     for an ed25519 webhook, the key receivers verify with)
//	GET    /webhooks/{id}/health         Health -> 200, the circuit: {state, consecutive_failures, ...}
//	GET    /webhooks/{id}/stats          -> 200, {"hours": [{"hour", "success", "failed"}, ...]}: attempts
//	                                     per hour by outcome, the last 24 hours, oldest first
//	GET    /deliveries/{id}              -> 200, the delivery with its attempt history
//	POST   /deliveries/{id}/redeliver    Redeliver -> 200, the delivery (unchanged unless it was failed);
//	                                     202 when the attempt was left to the worker (ErrDeferred).
//	                                     Repeated or concurrent calls re-send it once
//	GET    /ui/                          the web UI (HTML, JS and CSS embedded in the library; see ui.go),
//	                                     which calls the routes above
//
// Errors are {"error": {"code": ..., "message": ...}}:
//
//	400 invalid_request     malformed JSON, unknown fields, a missing body, an invalid webhook, a bad
//	                        status, limit, cursor, since, until or grace_seconds
//	404 not_found           an unknown webhook or delivery id, or no such route
//	405 method_not_allowed  a known route with another method (the Allow header lists the methods)
//	409 conflict            a registry change lost repeated races with others; retry
//	409 webhook_disabled    redeliver of a delivery whose webhook is disabled; enable it first
//	413 too_large           a request body over 64 KiB
//	500 internal            anything else; the cause is logged to Options.Logger, never sent
func (d *Dispatcher) Handler() http.Handler { return d.newAdminHandler(false) }

// newAdminHandler builds the admin API: the operator's (every tenant), or the portal's (the tenant of
// the request's token only).
func (d *Dispatcher) newAdminHandler(portal bool) *adminHandler {
	h := &adminHandler{d: d, mux: http.NewServeMux(), portal: portal}
	h.mux.HandleFunc("POST /webhooks", h.createWebhook)
	h.mux.HandleFunc("GET /webhooks", h.listWebhooks)
	h.mux.HandleFunc("GET /webhooks/{id}", h.getWebhook)
	h.mux.HandleFunc("PATCH /webhooks/{id}", h.patchWebhook)
	h.mux.HandleFunc("DELETE /webhooks/{id}", h.deleteWebhook)
	h.mux.HandleFunc("POST /webhooks/{id}/test", h.testWebhook)
	h.mux.HandleFunc("POST /webhooks/{id}/rotate-secret", h.rotateSecret)
	h.mux.HandleFunc("GET /webhooks/{id}/deliveries", h.listDeliveries)
	h.mux.HandleFunc("POST /webhooks/{id}/recover", h.recoverWebhook)
	h.mux.HandleFunc("GET /deliveries/{id}", h.getDelivery)
	h.mux.HandleFunc("POST /deliveries/{id}/redeliver", h.redeliver)
	h.mux.HandleFunc("GET /webhooks/{id}/secret", h.webhookSecret)
	h.mux.HandleFunc("GET /webhooks/{id}/health", h.webhookHealth)
	h.mux.HandleFunc("GET /webhooks/{id}/stats", h.webhookStats)
	h.mux.Handle("GET /ui/", newUIHandler(portal))
	h.mux.HandleFunc("GET /ui", redirectToUI)
	return h
}

// adminHandler serves Dispatcher.Handler.
type adminHandler struct {
	d      *Dispatcher
	mux    *http.ServeMux
	portal bool // every route restricted to the tenant of the request's portal token
}

func (h *adminHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBody)
	if _, pattern := h.mux.Handler(r); pattern == "" {
		h.unrouted(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// unrouted answers a request no route takes with the mux's status (404, or 405 with Allow) as JSON.
func (h *adminHandler) unrouted(w http.ResponseWriter, r *http.Request) {
	mh, _ := h.mux.Handler(r)
	c := &statusCapture{header: http.Header{}}
	mh.ServeHTTP(c, r)
	if c.code == http.StatusMethodNotAllowed {
		if allow := c.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		writeAPIError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method "+r.Method+" is not allowed here")
		return
	}
	writeAPIError(w, http.StatusNotFound, "not_found", "no such route")
}

// statusCapture records the status a handler writes and discards its body.
type statusCapture struct {
	header http.Header
	code   int
}

func (c *statusCapture) Header() http.Header { return c.header }

func (c *statusCapture) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return len(b), nil
}

func (c *statusCapture) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
}

// webhookBody is the body of POST /webhooks.
type webhookBody struct {
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
	Disabled    bool     `json:"disabled"`
	RateLimit   int      `json:"rate_limit"`
	// Tenant is refused by the portal, which sets the token's.
	Tenant     string            `json:"tenant"`
	Headers    map[string]string `json:"headers"`
	Filter     json.RawMessage   `json:"filter"`
	Asymmetric bool              `json:"asymmetric"`
}

// webhookPatch is the body of PATCH /webhooks/{id}: a nil field is left as it is.
type webhookPatch struct {
	URL         *string            `json:"url"`
	Events      *[]string          `json:"events"`
	Description *string            `json:"description"`
	Disabled    *bool              `json:"disabled"`
	RateLimit   *int               `json:"rate_limit"`
	Headers     *map[string]string `json:"headers"`
	Filter      *json.RawMessage   `json:"filter"`
}

// rotateBody is the optional body of POST /webhooks/{id}/rotate-secret.
type rotateBody struct {
	GraceSeconds *int64 `json:"grace_seconds"`
}

func (h *adminHandler) createWebhook(w http.ResponseWriter, r *http.Request) {
	var body webhookBody
	if err := decodeBody(r, &body, false); err != nil {
		h.fail(w, r, err)
		return
	}
	if h.portal {
		if body.Tenant != "" {
			h.fail(w, r, fmt.Errorf("%w: tenant is set by the portal token", errBadRequest))
			return
		}
		body.Tenant = requestTenant(r)
	}
	wh, err := h.d.webhooks.Create(r.Context(), Webhook{URL: body.URL, Events: body.Events, Tenant: body.Tenant,
		Description: body.Description, Disabled: body.Disabled, RateLimit: body.RateLimit, Headers: body.Headers,
		Filter: body.Filter, Asymmetric: body.Asymmetric})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, r, http.StatusCreated, wh)
}

func (h *adminHandler) listWebhooks(w http.ResponseWriter, r *http.Request) {
	var list []*Webhook
	var err error
	switch t, ok := r.URL.Query()["tenant"]; {
	case h.portal:
		list, err = h.d.webhooks.ListTenant(r.Context(), requestTenant(r))
	case ok:
		list, err = h.d.webhooks.ListTenant(r.Context(), t[0])
		if errors.Is(err, ErrInvalidWebhook) {
			err = fmt.Errorf("%w: %w", errBadRequest, err)
		}
	default:
		list, err = h.d.webhooks.List(r.Context())
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, wh := range list {
		wh.Secret = ""
	}
	h.write(w, r, http.StatusOK, struct {
		Webhooks []*Webhook `json:"webhooks"`
	}{list})
}

func (h *adminHandler) getWebhook(w http.ResponseWriter, r *http.Request) {
	wh, err := h.webhook(r, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	wh.Secret = ""
	h.write(w, r, http.StatusOK, wh)
}

func (h *adminHandler) patchWebhook(w http.ResponseWriter, r *http.Request) {
	var p webhookPatch
	if err := decodeBody(r, &p, false); err != nil {
		h.fail(w, r, err)
		return
	}
	id := r.PathValue("id")
	wh, err := h.webhook(r, id)
	if err == nil && (p.URL != nil || p.Events != nil || p.Description != nil || p.Disabled != nil ||
		p.RateLimit != nil || p.Headers != nil || p.Filter != nil) {
		// One read-modify-write of the registry, so concurrent patches of different fields all apply.
		wh, err = h.d.webhooks.modify(r.Context(), id, func(s *storedWebhook) error {
			if p.URL != nil {
				s.URL = *p.URL
			}
			if p.Events != nil {
				s.Events = compactPatterns(*p.Events)
			}
			if p.Description != nil {
				s.Description = *p.Description
			}
			if p.Disabled != nil {
				s.Disabled = *p.Disabled
			}
			if p.RateLimit != nil {
				s.RateLimit = *p.RateLimit
			}
			if p.Headers != nil {
				s.Headers = canonicalHeaders(*p.Headers)
			}
			if p.Filter != nil {
				s.Filter = compactFilter(*p.Filter)
			}
			return h.d.webhooks.validate(s)
		})
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	wh.Secret = ""
	h.write(w, r, http.StatusOK, wh)
}

func (h *adminHandler) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	if _, err := h.webhook(r, r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.d.webhooks.Delete(r.Context(), r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *adminHandler) testWebhook(w http.ResponseWriter, r *http.Request) {
	if _, err := h.webhook(r, r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	dl, err := h.d.SendTest(r.Context(), r.PathValue("id"))
	if errors.Is(err, ErrDeferred) && dl != nil {
		h.write(w, r, http.StatusAccepted, dl) // created and scheduled; a worker makes the attempt
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, r, http.StatusCreated, dl)
}

func (h *adminHandler) rotateSecret(w http.ResponseWriter, r *http.Request) {
	var body rotateBody
	if err := decodeBody(r, &body, true); err != nil {
		h.fail(w, r, err)
		return
	}
	grace := DefaultRotationGrace
	if body.GraceSeconds != nil {
		s := *body.GraceSeconds
		if s < 0 || s > int64(MaxRotationGrace/time.Second) {
			h.fail(w, r, fmt.Errorf("%w: grace_seconds must be in [0, %d]", errBadRequest, int64(MaxRotationGrace/time.Second)))
			return
		}
		grace = time.Duration(s) * time.Second
	}
	if _, err := h.webhook(r, r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	wh, err := h.d.webhooks.RotateSecret(r.Context(), r.PathValue("id"), grace)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, r, http.StatusOK, wh)
}

func (h *adminHandler) webhookSecret(w http.ResponseWriter, r *http.Request) {
	wh, err := h.webhook(r, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, r, http.StatusOK, struct {
		Secret    string `json:"secret"`
		PublicKey string `json:"public_key,omitempty"`
	}{wh.Secret, wh.PublicKey})
}

func (h *adminHandler) webhookHealth(w http.ResponseWriter, r *http.Request) {
	if _, err := h.webhook(r, r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	hl, err := h.d.webhooks.Health(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, r, http.StatusOK, hl)
}

func (h *adminHandler) webhookStats(w http.ResponseWriter, r *http.Request) {
	if _, err := h.webhook(r, r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	hours, err := h.d.hourlyStats(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, r, http.StatusOK, struct {
		Hours []HourStats `json:"hours"`
	}{hours})
}

// webhook reads a webhook the request may see: any for the operator, only its token's tenant's in the
// portal (another tenant's answers as not found).
func (h *adminHandler) webhook(r *http.Request, id string) (*Webhook, error) {
	wh, err := h.d.webhooks.Get(r.Context(), id)
	if err == nil && h.portal && wh.Tenant != requestTenant(r) {
		return nil, fmt.Errorf("%w: webhook %q", ErrNotFound, id)
	}
	return wh, err
}

// decodeBody decodes a request body holding exactly one JSON value into dst, refusing unknown fields.
// An empty body is an error unless optional.
func decodeBody(r *http.Request, dst any, optional bool) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if errors.Is(err, io.EOF) {
		if optional {
			return nil
		}
		return fmt.Errorf("%w: the body must be a JSON object", errBadRequest)
	}
	if err == nil {
		if err = dec.Decode(&struct{}{}); errors.Is(err, io.EOF) {
			return nil
		}
		if err == nil {
			err = errors.New("more than one JSON value")
		}
	}
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return mbe
	}
	return fmt.Errorf("%w: malformed JSON body: %w", errBadRequest, err)
}

// classifyAPIError maps an error to a status, an error code and a message safe to send.
func classifyAPIError(err error) (status int, code, message string) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit)
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, "not_found", err.Error()
	case errors.Is(err, errBadRequest), errors.Is(err, ErrInvalidWebhook), errors.Is(err, ErrInvalidQuery):
		return http.StatusBadRequest, "invalid_request", err.Error()
	case errors.Is(err, ErrConflict):
		return http.StatusConflict, "conflict", "the webhook was changed concurrently; try again"
	case errors.Is(err, ErrWebhookDisabled):
		return http.StatusConflict, "webhook_disabled", err.Error()
	case errors.Is(err, ErrTenantQuota):
		return http.StatusConflict, "tenant_quota", err.Error()
	default:
		return http.StatusInternalServerError, "internal", "internal error"
	}
}

// fail answers with the error's status; the cause of a 500 is logged, not sent.
func (h *adminHandler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, code, message := classifyAPIError(err)
	if status == http.StatusInternalServerError {
		level := h.d.log.Error
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			level = h.d.log.Debug // the client went away
		}
		level("webhooks: admin API request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	writeAPIError(w, status, code, message)
}

// write answers with v as JSON.
func (h *adminHandler) write(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		h.fail(w, r, fmt.Errorf("webhooks: encode response: %w", err))
		return
	}
	writeAPIJSON(w, status, b)
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeAPIError(w http.ResponseWriter, status int, code, message string) {
	b, _ := json.Marshal(errorBody{errorDetail{code, message}}) // strings always encode
	writeAPIJSON(w, status, b)
}

func writeAPIJSON(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
