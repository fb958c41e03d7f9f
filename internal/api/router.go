package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"
)

// router serves the API's routes within a scope.
type router struct {
	b      Backend
	log    *slog.Logger
	mux    *http.ServeMux
	ui     map[string]http.Handler // the UI's routes, by mux pattern
	spec   []byte                  // the OpenAPI document this router serves
	portal bool
}

// Routes of the UI's static files.
const (
	uiFilesPattern = "GET /ui/"
	uiRootPattern  = "GET /ui"
)

// route is one of the API's routes: a mux pattern and its handler. operatorOnly routes are not
// served by the portal (nor in its OpenAPI document).
type route struct {
	pattern      string
	handler      func(*router) http.HandlerFunc
	operatorOnly bool
}

// routes is the API's table of routes: the router serves exactly these (and the UI's), and the OpenAPI
// document describes exactly these (a test checks both ways).
var routes = []route{
	{pattern: "POST /webhooks", handler: method((*router).createWebhook)},
	{pattern: "GET /webhooks", handler: method((*router).listWebhooks)},
	{pattern: "GET /webhooks/{id}", handler: method((*router).getWebhook)},
	{pattern: "PATCH /webhooks/{id}", handler: method((*router).patchWebhook)},
	{pattern: "DELETE /webhooks/{id}", handler: method((*router).deleteWebhook)},
	{pattern: "POST /webhooks/{id}/test", handler: method((*router).testWebhook)},
	{pattern: "POST /webhooks/{id}/rotate-secret", handler: method((*router).rotateSecret)},
	{pattern: "GET /webhooks/{id}/deliveries", handler: method((*router).listDeliveries)},
	{pattern: "POST /webhooks/{id}/recover", handler: method((*router).recoverWebhook)},
	{pattern: "POST /webhooks/{id}/replay", handler: method((*router).replayWebhook)},
	{pattern: "GET /deliveries/{id}", handler: method((*router).getDelivery)},
	{pattern: "POST /deliveries/{id}/redeliver", handler: method((*router).redeliver)},
	{pattern: "GET /webhooks/{id}/secret", handler: method((*router).secret)},
	{pattern: "GET /webhooks/{id}/health", handler: byID(Backend.Health)},
	{pattern: "GET /webhooks/{id}/stats", handler: method((*router).stats)},
	{pattern: "GET /webhooks/{id}/counts", handler: byID(Backend.Counts)},
	{pattern: "POST /deliveries/{id}/retry", handler: byID(Backend.RetryNow)},
	{pattern: "GET /deliveries/{id}/payload", handler: method((*router).payload)},
	{pattern: "GET /deliveries/{id}/request", handler: byID(Backend.Request)},
	{pattern: "GET /deliveries/{id}/queue", handler: byID(Backend.OrderQueue)},
	{pattern: "GET /deliveries", handler: method((*router).searchDeliveries)},
	{pattern: "GET /backlog", handler: method((*router).backlog), operatorOnly: true},
	{pattern: "POST /webhooks/{id}/probe", handler: byID(Backend.ProbeNow), operatorOnly: true},
	{pattern: "DELETE /tenants/{tenant}", handler: method((*router).expungeTenant), operatorOnly: true},
	{pattern: "GET /event-types", handler: method((*router).listEventTypes)},
	{pattern: "GET /event-types/{name}", handler: method((*router).getEventType)},
	{pattern: catalogPattern, handler: method((*router).catalogDocument)},
	{pattern: "POST /event-types", handler: method((*router).createEventType), operatorOnly: true},
	{pattern: "PATCH /event-types/{name}", handler: method((*router).patchEventType), operatorOnly: true},
	{pattern: "DELETE /event-types/{name}", handler: method((*router).deleteEventType), operatorOnly: true},
	{pattern: "POST /transform/preview", handler: method((*router).previewTransform)},
	{pattern: openAPIPattern, handler: method((*router).openAPI)},
}

// byID serves a read of one webhook's or delivery's data, or an action on it that takes no body: the
// id in the path, Backend's answer as JSON.
func byID[T any](read func(Backend, context.Context, Scope, string) (T, error)) func(*router) http.HandlerFunc {
	return func(rt *router) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			out, err := read(rt.b, r.Context(), scopeOf(r), r.PathValue("id"))
			rt.answer(w, r, http.StatusOK, out, err)
		}
	}
}

// method adapts a router method to the table.
func method(f func(*router, http.ResponseWriter, *http.Request)) func(*router) http.HandlerFunc {
	return func(rt *router) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { f(rt, w, r) }
	}
}

func newRouter(b Backend, log *slog.Logger, portal bool) *router {
	rt := &router{b: b, log: log, mux: http.NewServeMux(), spec: openAPIFor(portal), portal: portal}
	for _, r := range routes {
		if portal && r.operatorOnly {
			continue
		}
		rt.mux.HandleFunc(r.pattern, r.handler(rt))
	}
	rt.ui = map[string]http.Handler{uiFilesPattern: newUIHandler(portal), uiRootPattern: http.HandlerFunc(redirectToUI)}
	for pattern, h := range rt.ui {
		rt.mux.Handle(pattern, h)
	}
	return rt
}

// publicRoute returns the handler of a route that holds no data and needs no portal token (the UI's
// files and the OpenAPI document) when the mux routes r to one: the same decision the mux makes, on
// the same (escaped) path.
func (rt *router) publicRoute(r *http.Request) (http.Handler, bool) {
	_, pattern := rt.mux.Handler(r)
	if pattern == openAPIPattern {
		return http.HandlerFunc(rt.openAPI), true
	}
	h, ok := rt.ui[pattern]
	return h, ok
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) { rt.serve(w, r, Scope{}) }

// scopeKey keys a request's Scope in its context.
type scopeKey struct{}

// scopeOf is the scope a request was served in.
func scopeOf(r *http.Request) Scope {
	s, _ := r.Context().Value(scopeKey{}).(Scope)
	return s
}

// serve routes a request within a scope; a request no route takes gets the mux's status (404, or 405
// with Allow) as JSON.
func (rt *router) serve(w http.ResponseWriter, r *http.Request, s Scope) {
	if !guard(w, r) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBody)
	r = r.WithContext(context.WithValue(r.Context(), scopeKey{}, s))
	mh, pattern := rt.mux.Handler(r)
	if pattern != "" {
		rt.mux.ServeHTTP(w, r)
		return
	}
	c := &statusCapture{header: http.Header{}}
	mh.ServeHTTP(c, r)
	if c.code == http.StatusMethodNotAllowed {
		if allow := c.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method "+r.Method+" is not allowed here")
		return
	}
	writeError(w, http.StatusNotFound, "not_found", "no such route")
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

// readBody reads a request's body (bounded by MaxRequestBody); an empty one is an error unless
// optional, and is returned as nil.
func readBody(r *http.Request, optional bool) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 && !optional {
		return nil, fmt.Errorf("%w: the body must be a JSON object", ErrBadRequest)
	}
	return b, nil
}

// classify maps an error to a status, an error code and a message safe to send.
func (rt *router) classify(err error) (status int, code, message string) {
	var mbe *http.MaxBytesError
	kind := KindBadRequest
	switch {
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit)
	case !errors.Is(err, ErrBadRequest):
		kind = rt.b.Classify(err)
	}
	switch kind {
	case KindBadRequest:
		return http.StatusBadRequest, "invalid_request", err.Error()
	case KindNotFound:
		return http.StatusNotFound, "not_found", err.Error()
	case KindConflict:
		return http.StatusConflict, "conflict", "the webhook was changed concurrently; try again"
	case KindWebhookDisabled:
		return http.StatusConflict, "webhook_disabled", err.Error()
	case KindTenantQuota:
		return http.StatusConflict, "tenant_quota", err.Error()
	case KindNotRetryable:
		return http.StatusConflict, "not_retryable", err.Error()
	case KindProbeRefused:
		return http.StatusConflict, "probe_refused", err.Error()
	case KindTooMany:
		return http.StatusTooManyRequests, "too_many_requests", err.Error()
	case KindExists:
		return http.StatusConflict, "exists", err.Error()
	case KindPayloadExpired:
		return http.StatusConflict, "payload_expired", err.Error()
	}
	return http.StatusInternalServerError, "internal", "internal error"
}

// fielder is an error about one field of the request's body, named as in its JSON.
type fielder interface{ Field() string }

// fail answers with the error's status (and, for a bad request, the field it is about when the error
// names one; for a 429, Retry-After: the whole seconds until the action would be granted, at least
// 1); the cause of a 500 is logged, not sent.
func (rt *router) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, code, message := rt.classify(err)
	var f fielder
	if status == http.StatusBadRequest && errors.As(err, &f) {
		writeErrorBody(w, status, ErrorDetail{Code: code, Message: message, Field: f.Field()})
		return
	}
	var limited interface{ RetryAfter() time.Duration }
	if status == http.StatusTooManyRequests && errors.As(err, &limited) {
		w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(max(limited.RetryAfter(), time.Second).Seconds())), 10))
	}
	if status == http.StatusInternalServerError {
		level := rt.log.Error
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			level = rt.log.Debug // the client went away
		}
		level("webhooks: admin API request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	writeError(w, status, code, message)
}

// answer writes v's JSON with status, or the error.
func (rt *router) answer(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	body, err := json.Marshal(v)
	if err != nil {
		rt.fail(w, r, fmt.Errorf("webhooks: encode response: %w", err))
		return
	}
	writeJSON(w, status, body)
}

// ErrorBody is the JSON of every error answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is an error answer's code and message, and the request field it is about when known.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeErrorBody(w, status, ErrorDetail{Code: code, Message: message})
}

func writeErrorBody(w http.ResponseWriter, status int, d ErrorDetail) {
	b, _ := json.Marshal(ErrorBody{d}) // strings always encode
	writeJSON(w, status, b)
}

// writeJSON answers status with the JSON b and a newline. b may be shared by concurrent requests (the
// catalog's answers are made once per version): it is only read.
func writeJSON(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	_, _ = w.Write(newline)
}

var newline = []byte{'\n'}
