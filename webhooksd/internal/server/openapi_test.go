package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"

	"github.com/smartdrop/webhooks/webhooksd/internal/config"
)

const opKey = "operator-key-0123456789"

// newTestServer opens a server of args (config.Parse's) on a miniredis of the test's own.
func newTestServer(t *testing.T, mr *miniredis.Miniredis, args ...string) *Server {
	t.Helper()
	args = append([]string{"-redis", "redis://" + mr.Addr(), "-api-key", opKey, "-allow-private-networks",
		"-portal-key", strings.Repeat("p", 32), "-max-payload-bytes", "4096"}, args...)
	cfg, err := config.Parse(args, func(string) string { return "" }, io.Discard, []string{"http"})
	require.NoError(t, err)
	s, err := Open(context.Background(), cfg, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// checker validates a handler's answers against webhooksd's OpenAPI document, and records which
// documented (operation, status) pairs it saw.
type checker struct {
	t        *testing.T
	h        http.Handler
	spec     map[string]any
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	seen     map[string]bool
}

const specURL = "file:///webhooksd-openapi.json"

func newChecker(t *testing.T, h http.Handler) *checker {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/openapi.json", nil))
	require.Equal(t, 200, rec.Code, "the document is served without a key")
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(rec.Body.Bytes()))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	require.NoError(t, c.AddResource(specURL, doc))
	spec, _ := doc.(map[string]any)
	assert.Equal(t, "3.1.0", spec["openapi"])
	return &checker{t: t, h: h, spec: spec, compiler: c, seen: map[string]bool{}}
}

func pointer(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1") }

// call sends a request and checks its answer: the status documented, the body valid against its
// schema, the request body (when the document has one) valid against the request schema.
func (c *checker) call(method, path, key, body string) (int, map[string]any, http.Header) {
	c.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	paths, _ := c.spec["paths"].(map[string]any)
	item, _ := paths[path].(map[string]any)
	op, _ := item[strings.ToLower(method)].(map[string]any)
	require.NotNil(c.t, op, "%s %s is not in the document", method, path)
	status := strconv.Itoa(rec.Code)
	responses, _ := op["responses"].(map[string]any)
	_, ok := responses[status]
	require.True(c.t, ok, "%s %s answered %s, which the document does not list: %s", method, path, status, rec.Body.String())
	base := specURL + "#/paths/" + pointer(path) + "/" + strings.ToLower(method)
	sch, err := c.compiler.Compile(base + "/responses/" + status + "/content/application~1json/schema")
	require.NoError(c.t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(rec.Body.Bytes()))
	require.NoError(c.t, err, "%s %s %s: not JSON: %s", method, path, status, rec.Body.String())
	assert.NoError(c.t, sch.Validate(inst), "%s %s %s: %s", method, path, status, rec.Body.String())
	assert.Equal(c.t, "application/json", rec.Header().Get("Content-Type"))
	assert.NotEmpty(c.t, rec.Header().Get("X-Request-Id"), "every answer names its request id")
	if rec.Code < 300 && body != "" {
		rs, err := c.compiler.Compile(base + "/requestBody/content/application~1json/schema")
		require.NoError(c.t, err)
		in, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
		require.NoError(c.t, err)
		assert.NoError(c.t, rs.Validate(in), "the request the server took is one the document allows: %s", body)
	}
	c.mu.Lock()
	c.seen[method+" "+path+" "+status] = true
	c.mu.Unlock()
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out, rec.Header()
}

// TestOpenAPIAnswers: every (operation, status) the document lists is answered by the real server,
// and every answer is valid against the document.
func TestOpenAPIAnswers(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	s := newTestServer(t, mr)
	c := newChecker(t, s.Handler())
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	t.Cleanup(rcv.Close)
	_, err := s.Dispatcher().Webhooks().Create(context.Background(), webhookTo(rcv.URL))
	require.NoError(t, err)

	ev := `{"id":"e1","type":"order.created","tenant":"","data":{"n":1},"time":"2026-01-02T03:04:05Z"}`
	st, out, _ := c.call("POST", "/v1/events", opKey, ev)
	require.Equal(t, 202, st)
	st, out, _ = c.call("POST", "/v1/events", opKey, ev)
	require.Equal(t, 202, st)
	assert.Equal(t, true, out["events"].([]any)[0].(map[string]any)["duplicate"])
	st, _, _ = c.call("POST", "/v1/events", opKey, `{"events":[{"id":"e2","type":"order.created"},{"id":"e3","type":"order.paid","order_key":"o-1"}]}`)
	require.Equal(t, 202, st)
	c.call("POST", "/v1/events", opKey, `{"id":"e4"}`)                                                     // 400
	c.call("POST", "/v1/events", "", ev)                                                                   // 401
	c.call("POST", "/v1/events", opKey, `{"id":"e1","type":"order.created","data":{"n":2}}`)               // 409
	c.call("POST", "/v1/events", opKey, `{"id":"e5","type":"a.b","data":"`+strings.Repeat("x", 5000)+`"}`) // 413
	c.call("POST", "/v1/portal-tokens", opKey, `{"tenant":"acme","ttl_seconds":600}`)                      // 201
	c.call("POST", "/v1/portal-tokens", opKey, `{"tenant":"a b"}`)                                         // 400
	c.call("POST", "/v1/portal-tokens", "", `{"tenant":"acme"}`)                                           // 401
	c.call("GET", "/healthz", "", "")
	c.call("GET", "/readyz", "", "")
	s.draining.Store(true)
	st, out, hdr := c.call("POST", "/v1/events", opKey, ev)
	assert.Equal(t, 503, st)
	assert.Equal(t, "shutting_down", out["error"].(map[string]any)["code"])
	assert.Equal(t, "1", hdr.Get("Retry-After"))
	c.call("GET", "/readyz", "", "")
	s.draining.Store(false)
	mr.SetError("LOADING Redis is loading the dataset in memory")
	st, out, hdr = c.call("POST", "/v1/events", opKey, `{"id":"e6","type":"order.created"}`)
	assert.Equal(t, 503, st)
	assert.Equal(t, "unavailable", out["error"].(map[string]any)["code"])
	assert.Equal(t, "1", hdr.Get("Retry-After"))
	mr.SetError("")

	// No portal key: 409 portal_off. Another shard count than the key prefix's: 500.
	noPortal := newChecker(t, newTestServer(t, mr, "-portal-key", "").Handler())
	noPortal.call("POST", "/v1/portal-tokens", opKey, `{"tenant":"acme"}`)
	wrongShards := newChecker(t, newTestServer(t, mr, "-shards", "8").Handler())
	st, _, _ = wrongShards.call("POST", "/v1/events", opKey, `{"id":"e7","type":"order.created"}`)
	assert.Equal(t, 500, st)

	for _, ch := range []*checker{noPortal, wrongShards} {
		for k := range ch.seen {
			c.seen[k] = true
		}
	}
	paths, _ := c.spec["paths"].(map[string]any)
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			for status := range op.(map[string]any)["responses"].(map[string]any) {
				assert.True(t, c.seen[strings.ToUpper(method)+" "+path+" "+status], "%s %s %s never answered", method, path, status)
			}
		}
	}
}

// TestRoutesNeedKeys: the admin API needs an operator key, a producer key opens ingest only, the
// UI's static files and the documents need none, the portal its token.
func TestRoutesNeedKeys(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, miniredis.RunT(t), "-ingest-key", "producer-key-0123456789")
	h := s.Handler()
	call := func(method, path, key string) int {
		req := httptest.NewRequest(method, path, strings.NewReader(`{"id":"x1","type":"a.b"}`))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	producer := "producer-key-0123456789"
	for _, c := range []struct {
		method, path, key string
		want              int
	}{
		{"GET", "/webhooks", "", 401}, {"GET", "/webhooks", producer, 401}, {"GET", "/webhooks", "bearer-but-wrong-0123", 401},
		{"GET", "/webhooks", opKey, 200}, {"GET", "/backlog", opKey, 200}, {"GET", "/backlog", "", 401},
		{"POST", "/v1/events", producer, 202}, {"POST", "/v1/events", opKey, 202}, {"POST", "/v1/events", "", 401},
		{"POST", "/v1/portal-tokens", producer, 401},
		{"GET", "/ui/", "", 200}, {"GET", "/ui/app.js", "", 200}, {"GET", "/openapi.json", "", 200}, {"GET", "/v1/openapi.json", "", 200},
		{"GET", "/", "", 302}, {"GET", "/portal/webhooks", "", 401}, {"GET", "/portal/webhooks", opKey, 401},
		{"GET", "/portal/ui/", "", 200}, {"GET", "/healthz", "", 200}, {"GET", "/metrics", "", 200},
	} {
		assert.Equal(t, c.want, call(c.method, c.path, c.key), "%s %s with key %q", c.method, c.path, c.key)
	}
}

// TestMetricsCountIngest: /metrics has the library's metrics and ingest's counters and histograms,
// which count what was sent.
func TestMetricsCountIngest(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, miniredis.RunT(t))
	h := s.Handler()
	post := func(body string) {
		req := httptest.NewRequest("POST", "/v1/events", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+opKey)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	post(`{"id":"m1","type":"a.b"}`)
	post(`{"id":"m1","type":"a.b"}`)
	post(`{"events":[{"id":"m2","type":"a.b"},{"id":"m3","type":"a.b"}]}`)
	post(`{"id":"m4"}`)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	m := rec.Body.String()
	for _, want := range []string{
		`webhooksd_ingest_requests_total{code="202",shape="single"} 2`,
		`webhooksd_ingest_requests_total{code="202",shape="batch"} 1`,
		`webhooksd_ingest_requests_total{code="400",shape="none"} 1`,
		`webhooksd_ingest_events_total{outcome="invalid"} 1`,
		`webhooksd_ingest_request_duration_seconds_count{shape="single"} 2`,
		`webhooksd_http_requests_total{code="202",route="ingest"} 3`,
		"webhooks_deliveries_failed_total", "webhooks_due_deliveries", "go_goroutines", "process_resident_memory_bytes",
	} {
		assert.True(t, strings.Contains(m, want), "/metrics has %s", want)
	}
	// No webhook subscribes: the events are accepted with no deliveries, so none is a duplicate.
	assert.True(t, strings.Contains(m, `webhooksd_ingest_events_total{outcome="accepted"} 4`), "4 accepted")
}

func webhookTo(url string) webhooks.Webhook { return webhooks.Webhook{URL: url, Events: []string{"*"}} }
