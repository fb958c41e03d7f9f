// Package openapitest checks the admin API's real answers against its OpenAPI document: every
// operation of the document is called on Handler (and, but the operator-only ones, on Portal) of a
// Dispatcher on miniredis, and each answer's status must be documented and its body valid against
// the documented schema (JSON Schema 2020-12, formats asserted). It is a module of its own so that
// the schema validator stays out of the library's go.mod.
package openapitest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
)

const specURL = "file:///openapi.json"

// checker validates answers against one served document and records the operations it saw answer.
type checker struct {
	t        *testing.T
	h        http.Handler
	token    string
	spec     map[string]any
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	seen     map[string]bool // "GET /webhooks/{id}" -> a 2xx answer validated
}

func newChecker(t *testing.T, h http.Handler, token string) *checker {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(rec.Body.Bytes()))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	require.NoError(t, c.AddResource(specURL, doc))
	spec, _ := doc.(map[string]any)
	return &checker{t: t, h: h, token: token, spec: spec, compiler: c, seen: map[string]bool{}}
}

// pointer escapes a JSON pointer token.
func pointer(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1") }

// call sends method target (whose route is template), checks the answer against the document and
// returns its status and decoded body.
func (c *checker) call(method, template, target, body string) (int, map[string]any) {
	c.t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	op := method + " " + template
	status := strconv.Itoa(rec.Code)
	paths, _ := c.spec["paths"].(map[string]any)
	item, _ := paths[template].(map[string]any)
	operation, _ := item[strings.ToLower(method)].(map[string]any)
	require.NotNil(c.t, operation, "%s is not in the document", op)
	responses, _ := operation["responses"].(map[string]any)
	resp, ok := responses[status].(map[string]any)
	require.True(c.t, ok, "%s answered %s, which the document does not list (body %s)", op, status, rec.Body.String())
	content, _ := resp["content"].(map[string]any)
	if content == nil {
		assert.Empty(c.t, strings.TrimSpace(rec.Body.String()), "%s %s: the document lists no body", op, status)
	} else {
		require.Contains(c.t, content, "application/json", "%s %s", op, status)
		assert.Equal(c.t, "application/json", rec.Header().Get("Content-Type"), "%s %s", op, status)
		loc := specURL + "#/paths/" + pointer(template) + "/" + strings.ToLower(method) + "/responses/" + status + "/content/application~1json/schema"
		sch, err := c.compiler.Compile(loc)
		require.NoError(c.t, err, loc)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(rec.Body.Bytes()))
		require.NoError(c.t, err, "%s %s: the body is not JSON", op, status)
		assert.NoError(c.t, sch.Validate(inst), "%s %s: %s", op, status, rec.Body.String())
	}
	if rec.Code < 300 {
		c.mu.Lock()
		c.seen[op] = true
		c.mu.Unlock()
	}
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out
}

// operations are the document's operations.
func (c *checker) operations() []string {
	var ops []string
	paths, _ := c.spec["paths"].(map[string]any)
	for path, item := range paths {
		for method := range item.(map[string]any) {
			if method != "parameters" {
				ops = append(ops, strings.ToUpper(method)+" "+path)
			}
		}
	}
	return ops
}

// receiver answers 200 on /ok and 500 on /fail.
func receiver(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newDispatcher(t *testing.T) *webhooks.Dispatcher {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	d, err := webhooks.New(rdb, webhooks.Options{
		AllowPrivateNetworks: true, // the receiver is on loopback
		PortalKey:            []byte(strings.Repeat("k", 32)),
		RetrySchedule:        []time.Duration{time.Millisecond},
		BreakAfter:           2,
		Timeout:              5 * time.Second,
		ReplayIndex:          true, // for POST /webhooks/{id}/replay
	})
	require.NoError(t, err)
	return d
}
