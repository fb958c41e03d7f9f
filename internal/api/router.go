package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
)

// router serves the API's routes within a scope.
type router struct {
	b      Backend
	log    *slog.Logger
	mux    *http.ServeMux
	ui     map[string]http.Handler // the UI's routes, by mux pattern
	portal bool
}

// Routes of the UI's static files.
const (
	uiFilesPattern = "GET /ui/"
	uiRootPattern  = "GET /ui"
)

func newRouter(b Backend, log *slog.Logger, portal bool) *router {
	rt := &router{b: b, log: log, mux: http.NewServeMux(), portal: portal}
	rt.mux.HandleFunc("POST /webhooks", rt.createWebhook)
	rt.mux.HandleFunc("GET /webhooks", rt.listWebhooks)
	rt.mux.HandleFunc("GET /webhooks/{id}", rt.getWebhook)
	rt.mux.HandleFunc("PATCH /webhooks/{id}", rt.patchWebhook)
	rt.mux.HandleFunc("DELETE /webhooks/{id}", rt.deleteWebhook)
	rt.mux.HandleFunc("POST /webhooks/{id}/test", rt.testWebhook)
	rt.mux.HandleFunc("POST /webhooks/{id}/rotate-secret", rt.rotateSecret)
	rt.mux.HandleFunc("GET /webhooks/{id}/deliveries", rt.listDeliveries)
	rt.mux.HandleFunc("POST /webhooks/{id}/recover", rt.recoverWebhook)
	rt.mux.HandleFunc("POST /webhooks/{id}/replay", rt.replayWebhook)
	rt.mux.HandleFunc("GET /deliveries/{id}", rt.getDelivery)
	rt.mux.HandleFunc("POST /deliveries/{id}/redeliver", rt.redeliver)
	rt.mux.HandleFunc("GET /webhooks/{id}/secret", rt.webhookRead(Backend.Secret))
	rt.mux.HandleFunc("GET /webhooks/{id}/health", rt.webhookRead(Backend.Health))
	rt.mux.HandleFunc("GET /webhooks/{id}/stats", rt.webhookRead(Backend.Stats))
	rt.ui = map[string]http.Handler{uiFilesPattern: newUIHandler(portal), uiRootPattern: http.HandlerFunc(redirectToUI)}
	for pattern, h := range rt.ui {
		rt.mux.Handle(pattern, h)
	}
	return rt
}

// uiRoute returns the UI's handler when the mux routes r to one of the UI's routes: the same decision
// the mux makes, on the same (escaped) path.
func (rt *router) uiRoute(r *http.Request) (http.Handler, bool) {
	_, pattern := rt.mux.Handler(r)
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
		return nil, fmt.Errorf("%w: the body must be a JSON object", errBadRequest)
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
	case !errors.Is(err, errBadRequest):
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
	}
	return http.StatusInternalServerError, "internal", "internal error"
}

// fail answers with the error's status; the cause of a 500 is logged, not sent.
func (rt *router) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, code, message := rt.classify(err)
	if status == http.StatusInternalServerError {
		level := rt.log.Error
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			level = rt.log.Debug // the client went away
		}
		level("webhooks: admin API request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	writeError(w, status, code, message)
}

// answer writes body (JSON) with status, or the error.
func (rt *router) answer(w http.ResponseWriter, r *http.Request, status int, body []byte, err error) {
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	writeJSON(w, status, body)
}

// ErrorBody is the JSON of every error answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is an error answer's code and message.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	b, _ := json.Marshal(ErrorBody{ErrorDetail{code, message}}) // strings always encode
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
