package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// fakeBackend answers every read with its scope and fails with err when set; Classify reads the kind
// out of a kindError.
type fakeBackend struct{ err error }

type kindError struct{ kind Kind }

func (e kindError) Error() string { return fmt.Sprintf("kind %d (detail 10.0.0.1)", e.kind) }

func (f fakeBackend) answer(s Scope) ([]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	return fmt.Appendf(nil, `{"tenant":%q,"restricted":%t}`, s.Tenant, s.Restricted), nil
}

func (f fakeBackend) CreateWebhook(_ context.Context, s Scope, _ []byte) ([]byte, error) {
	return f.answer(s)
}
func (f fakeBackend) ListWebhooks(_ context.Context, s Scope) ([]byte, error) { return f.answer(s) }
func (f fakeBackend) GetWebhook(_ context.Context, s Scope, _ string) ([]byte, error) {
	return f.answer(s)
}
func (f fakeBackend) PatchWebhook(_ context.Context, s Scope, _ string, _ []byte) ([]byte, error) {
	return f.answer(s)
}
func (f fakeBackend) DeleteWebhook(context.Context, Scope, string) error { return f.err }
func (f fakeBackend) ListEventTypes(context.Context) ([]byte, error) {
	return []byte(`{"event_types":[{"name":"a.b","schema":{"type":"object"}}]}`), f.err
}
func (f fakeBackend) GetEventType(context.Context, string) ([]byte, error) { return f.answer(Scope{}) }
func (f fakeBackend) CreateEventType(context.Context, []byte) ([]byte, error) {
	return f.answer(Scope{})
}
func (f fakeBackend) PatchEventType(context.Context, string, []byte) ([]byte, error) {
	return f.answer(Scope{})
}
func (f fakeBackend) DeleteEventType(context.Context, string) error { return f.err }
func (f fakeBackend) SendTest(_ context.Context, s Scope, _ string) ([]byte, bool, error) {
	b, err := f.answer(s)
	return b, true, err
}
func (f fakeBackend) RotateSecret(_ context.Context, s Scope, _ string, _ time.Duration) ([]byte, error) {
	return f.answer(s)
}
func (f fakeBackend) Secret(_ context.Context, s Scope, _ string) ([]byte, error) { return f.answer(s) }
func (f fakeBackend) Health(_ context.Context, s Scope, _ string) ([]byte, error) { return f.answer(s) }
func (f fakeBackend) Counts(_ context.Context, s Scope, _ string) ([]byte, error) { return f.answer(s) }
func (f fakeBackend) Stats(_ context.Context, s Scope, _ string) ([]byte, error)  { return f.answer(s) }
func (f fakeBackend) Deliveries(_ context.Context, s Scope, _ string, _ DeliveryQuery) ([]byte, error) {
	return f.answer(s)
}
func (f fakeBackend) Recover(context.Context, Scope, string, time.Time, time.Time, int) (int, error) {
	return 2, f.err
}
func (f fakeBackend) Replay(context.Context, Scope, string, time.Time, string) (int, string, error) {
	return 2, "", f.err
}
func (f fakeBackend) Delivery(_ context.Context, s Scope, _ string) ([]byte, error) {
	return f.answer(s)
}
func (f fakeBackend) Redeliver(_ context.Context, s Scope, _ string) ([]byte, bool, error) {
	b, err := f.answer(s)
	return b, false, err
}
func (f fakeBackend) SearchDeliveries(_ context.Context, s Scope, _ DeliverySearch) ([]byte, error) {
	return f.answer(s)
}
func (f fakeBackend) RetryNow(_ context.Context, s Scope, _ string) ([]byte, error) {
	return f.answer(s)
}
func (f fakeBackend) ProbeNow(_ context.Context, s Scope, _ string) ([]byte, error) {
	return f.answer(s)
}
func (f fakeBackend) Request(_ context.Context, s Scope, _ string) ([]byte, error) {
	return f.answer(s)
}
func (f fakeBackend) OrderQueue(_ context.Context, s Scope, _ string) ([]byte, error) {
	return f.answer(s)
}
func (f fakeBackend) Payload(_ context.Context, s Scope, _ string) ([]byte, error) {
	return f.answer(s)
}
func (f fakeBackend) Backlog(context.Context) ([]byte, error) { return f.answer(Scope{}) }
func (fakeBackend) Authenticate(token string) (string, error) {
	if t, ok := strings.CutPrefix(token, "good-"); ok {
		return t, nil
	}
	return "", errors.New("bad token")
}
func (fakeBackend) Classify(err error) Kind {
	var k kindError
	if errors.As(err, &k) {
		return k.kind
	}
	return KindInternal
}

func serve(h http.Handler, method, target, token, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestKindsAnswerTheirStatus: each error kind answers its status and code; an internal error's cause
// is not sent.
func TestKindsAnswerTheirStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind   Kind
		status int
		code   string
	}{
		{KindBadRequest, 400, "invalid_request"}, {KindNotFound, 404, "not_found"}, {KindConflict, 409, "conflict"},
		{KindWebhookDisabled, 409, "webhook_disabled"}, {KindTenantQuota, 409, "tenant_quota"}, {KindNotRetryable, 409, "not_retryable"}, {KindProbeRefused, 409, "probe_refused"},
		{KindInternal, 500, "internal"},
	} {
		h := NewHandler(fakeBackend{err: kindError{tc.kind}}, slog.New(slog.DiscardHandler))
		rec := serve(h, "GET", "/webhooks/x", "", "")
		assert.Equal(t, tc.status, rec.Code, "kind %d", tc.kind)
		assert.Contains(t, rec.Body.String(), `"code":"`+tc.code+`"`)
		if tc.kind == KindInternal {
			assert.NotContains(t, rec.Body.String(), "10.0.0.1")
		}
	}
}

// TestRequestBounds: a body over MaxRequestBody answers 413, bad parameters 400, an unknown route 404
// and a known one with another method 405 with Allow.
func TestRequestBounds(t *testing.T) {
	t.Parallel()
	h := NewHandler(fakeBackend{}, slog.New(slog.DiscardHandler))
	assert.Equal(t, http.StatusRequestEntityTooLarge, serve(h, "POST", "/webhooks", "", strings.Repeat(" ", MaxRequestBody+1)).Code)
	assert.Equal(t, http.StatusBadRequest, serve(h, "POST", "/webhooks", "", "").Code, "a missing body")
	for _, target := range []string{"/webhooks/x/deliveries?limit=0", "/webhooks/x/deliveries?limit=x"} {
		assert.Equal(t, http.StatusBadRequest, serve(h, "GET", target, "", "").Code, target)
	}
	for _, body := range []string{`{"grace_seconds":-1}`, `{"grace_seconds":2592001}`, `{"grace":1}`, `[]`} {
		assert.Equal(t, http.StatusBadRequest, serve(h, "POST", "/webhooks/x/rotate-secret", "", body).Code, body)
	}
	assert.Equal(t, http.StatusBadRequest, serve(h, "POST", "/webhooks/x/recover", "", "").Code, "since is required")
	assert.Equal(t, http.StatusOK, serve(h, "POST", "/webhooks/x/recover?since=2020-01-01T00:00:00Z", "", "").Code)
	assert.Equal(t, http.StatusAccepted, serve(h, "POST", "/webhooks/x/test", "", "").Code, "a deferred attempt")
	assert.Equal(t, http.StatusNotFound, serve(h, "GET", "/nope", "", "").Code)
	rec := serve(h, "PUT", "/webhooks/x", "", "")
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Contains(t, rec.Header().Get("Allow"), "PATCH")
}

// TestPortalScopes: the operator's requests have every tenant in scope (or the one ?tenant= names); a
// portal request only its token's, and none without a valid token.
func TestPortalScopes(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	op, portal := NewHandler(fakeBackend{}, log), NewPortal(fakeBackend{}, log)
	body := func(rec *httptest.ResponseRecorder) string { b, _ := io.ReadAll(rec.Body); return string(b) }
	assert.JSONEq(t, `{"tenant":"","restricted":false}`, body(serve(op, "GET", "/webhooks", "", "")))
	assert.JSONEq(t, `{"tenant":"acme","restricted":true}`, body(serve(op, "GET", "/webhooks?tenant=acme", "", "")))
	assert.JSONEq(t, `{"tenant":"acme","restricted":true}`, body(serve(portal, "GET", "/webhooks/x", "good-acme", "")))
	assert.JSONEq(t, `{"tenant":"acme","restricted":true}`, body(serve(portal, "GET", "/webhooks?tenant=globex", "good-acme", "")),
		"the portal's tenant is its token's")
	for _, tok := range []string{"", "bad"} {
		rec := serve(portal, "GET", "/webhooks", tok, "")
		assert.Equal(t, http.StatusUnauthorized, rec.Code)
		assert.NotEmpty(t, rec.Header().Get("WWW-Authenticate"))
	}
	rec := serve(portal, "GET", "/ui/app.js", "", "")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, UIContentSecurityPolicy, rec.Header().Get("Content-Security-Policy"))
}
