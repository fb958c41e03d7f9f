package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/types"
)

// fakeBackend records the scope of every call in seen (when set) and fails with err when set;
// Classify reads the kind out of a kindError.
type fakeBackend struct {
	err  error
	seen *scopes
}

// scopes are the scopes a fakeBackend was called in, the latest last.
type scopes struct {
	mu   sync.Mutex
	list []Scope
}

// last is the scope of the latest call.
func (s *scopes) last() Scope {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.list) == 0 {
		return Scope{Tenant: "none seen"}
	}
	return s.list[len(s.list)-1]
}

type kindError struct{ kind Kind }

func (e kindError) Error() string { return fmt.Sprintf("kind %d (detail 10.0.0.1)", e.kind) }

// answer records s and returns v, or f.err.
func answer[T any](f fakeBackend, s Scope, v T) (T, error) {
	if f.seen != nil {
		f.seen.mu.Lock()
		f.seen.list = append(f.seen.list, s)
		f.seen.mu.Unlock()
	}
	if f.err != nil {
		var zero T
		return zero, f.err
	}
	return v, nil
}

func webhookIn(s Scope) *types.Webhook {
	return &types.Webhook{ID: "wh_1", Tenant: s.Tenant, URL: "https://example.com"}
}

func (f fakeBackend) CreateWebhook(_ context.Context, w types.Webhook) (*types.Webhook, error) {
	return answer(f, Scope{}, &w)
}
func (f fakeBackend) ListWebhooks(_ context.Context, s Scope) ([]*types.Webhook, error) {
	return answer(f, s, []*types.Webhook{webhookIn(s)})
}
func (f fakeBackend) GetWebhook(_ context.Context, s Scope, _ string) (*types.Webhook, error) {
	return answer(f, s, webhookIn(s))
}
func (f fakeBackend) PatchWebhook(_ context.Context, s Scope, _ string, apply func(*types.Webhook) (types.Webhook, error)) (*types.Webhook, error) {
	w, err := apply(webhookIn(s))
	if err != nil {
		return nil, err
	}
	return answer(f, s, &w)
}
func (f fakeBackend) DeleteWebhook(_ context.Context, s Scope, _ string) error {
	_, err := answer(f, s, 0)
	return err
}
func (f fakeBackend) EventTypesAnswer(_ context.Context, _ string, build func([]types.EventType) ([]byte, error)) ([]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	return build([]types.EventType{{Name: "a.b", Schema: json.RawMessage(`{"type":"object"}`)}})
}
func (f fakeBackend) GetEventType(_ context.Context, name string) (*types.EventType, error) {
	return answer(f, Scope{}, &types.EventType{Name: name})
}
func (f fakeBackend) CreateEventType(_ context.Context, t types.EventType) (*types.EventType, error) {
	return answer(f, Scope{}, &t)
}
func (f fakeBackend) PatchEventType(_ context.Context, name string, apply func(*types.EventType) error) (*types.EventType, error) {
	t := &types.EventType{Name: name}
	if err := apply(t); err != nil {
		return nil, err
	}
	return answer(f, Scope{}, t)
}
func (f fakeBackend) DeleteEventType(context.Context, string) error { return f.err }
func (f fakeBackend) SendTest(_ context.Context, s Scope, id string) (*types.Delivery, error) {
	dl, err := answer(f, s, &types.Delivery{ID: "dlv_1", WebhookID: id, Status: types.StatusPending})
	if err == nil {
		err = fmt.Errorf("left to a worker: %w", types.ErrDeferred)
	}
	return dl, err
}
func (f fakeBackend) RotateSecret(_ context.Context, s Scope, _ string, _ time.Duration) (*types.Webhook, error) {
	return answer(f, s, webhookIn(s))
}
func (f fakeBackend) Health(_ context.Context, s Scope, id string) (*types.Health, error) {
	return answer(f, s, &types.Health{WebhookID: id, State: types.CircuitClosed})
}
func (f fakeBackend) Counts(_ context.Context, s Scope, _ string) (Counts, error) {
	return answer(f, s, Counts{})
}
func (f fakeBackend) Stats(_ context.Context, s Scope, _ string) ([]types.HourStats, error) {
	return answer(f, s, []types.HourStats{})
}
func (f fakeBackend) Deliveries(_ context.Context, s Scope, _ string, _ DeliveryQuery) (*DeliveryPage, error) {
	return answer(f, s, &DeliveryPage{Deliveries: []DeliveryView{}})
}
func (f fakeBackend) Recover(_ context.Context, s Scope, _ string, _, _ time.Time, _ int) (int, error) {
	return answer(f, s, 2)
}
func (f fakeBackend) Replay(_ context.Context, s Scope, _ string, _ time.Time, _ string) (int, string, error) {
	n, err := answer(f, s, 2)
	return n, "", err
}
func (f fakeBackend) Delivery(_ context.Context, s Scope, id string) (*DeliveryDetail, error) {
	return answer(f, s, &DeliveryDetail{DeliveryView: DeliveryView{Delivery: &types.Delivery{ID: id}}})
}
func (f fakeBackend) Redeliver(_ context.Context, s Scope, id string) (*types.Delivery, error) {
	return answer(f, s, &types.Delivery{ID: id})
}
func (f fakeBackend) SearchDeliveries(_ context.Context, s Scope, _ DeliverySearch) (*SearchPage, error) {
	return answer(f, s, &SearchPage{Deliveries: []DeliveryView{}, Stopped: "end"})
}
func (f fakeBackend) RetryNow(_ context.Context, s Scope, id string) (*types.Delivery, error) {
	return answer(f, s, &types.Delivery{ID: id})
}
func (f fakeBackend) ProbeNow(_ context.Context, s Scope, id string) (*ProbeAnswer, error) {
	return answer(f, s, &ProbeAnswer{Circuit: types.Health{WebhookID: id}})
}
func (f fakeBackend) Request(_ context.Context, s Scope, _ string) (*DeliveryRequest, error) {
	return answer(f, s, &DeliveryRequest{Method: http.MethodPost})
}
func (f fakeBackend) OrderQueue(_ context.Context, s Scope, _ string) (*OrderQueue, error) {
	return answer(f, s, &OrderQueue{Deliveries: []*types.Delivery{}})
}
func (f fakeBackend) Payload(_ context.Context, s Scope, _ string) (*PayloadView, error) {
	return answer(f, s, &PayloadView{Payload: []byte(`{}`)})
}
func (f fakeBackend) ExpungeTenant(context.Context, string) (int, error) {
	return answer(f, Scope{}, 0)
}
func (f fakeBackend) Backlog(context.Context) (*Backlog, error) {
	return answer(f, Scope{}, &Backlog{})
}
func (fakeBackend) PreviewTransform(context.Context, string, types.Event) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}

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
		{KindWebhookDisabled, 409, "webhook_disabled"}, {KindTenantQuota, 409, "tenant_quota"}, {KindNotRetryable, 409, "not_retryable"}, {KindProbeRefused, 409, "probe_refused"}, {KindPayloadExpired, 409, "payload_expired"},
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
	seen := &scopes{}
	op, portal := NewHandler(fakeBackend{seen: seen}, log), NewPortal(fakeBackend{seen: seen}, log)
	scopeOf := func(rec *httptest.ResponseRecorder) Scope {
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		return seen.last()
	}
	assert.Equal(t, Scope{Tenant: "", Restricted: false}, scopeOf(serve(op, "GET", "/webhooks", "", "")))
	assert.Equal(t, Scope{Tenant: "acme", Restricted: true}, scopeOf(serve(op, "GET", "/webhooks?tenant=acme", "", "")))
	assert.Equal(t, Scope{Tenant: "acme", Restricted: true}, scopeOf(serve(portal, "GET", "/webhooks/x", "good-acme", "")))
	assert.Equal(t, Scope{Tenant: "acme", Restricted: true}, scopeOf(serve(portal, "GET", "/webhooks?tenant=globex", "good-acme", "")),
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
