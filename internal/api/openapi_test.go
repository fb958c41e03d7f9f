package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// specOperations lists a document's operations as mux patterns ("GET /webhooks/{id}").
func specOperations(t *testing.T, doc []byte) []string {
	t.Helper()
	var d struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(doc, &d))
	require.Equal(t, "3.1.0", d.OpenAPI)
	var ops []string
	for path, item := range d.Paths {
		for method := range item {
			if method == "parameters" || method == "summary" || method == "description" {
				continue
			}
			ops = append(ops, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(ops)
	return ops
}

// servedOperations lists the routes a router serves, from its table, the UI's aside.
func servedOperations(portal bool) []string {
	var ops []string
	for _, r := range routes {
		if !portal || !r.operatorOnly {
			ops = append(ops, r.pattern)
		}
	}
	slices.Sort(ops)
	return ops
}

// TestOpenAPICoversEveryRoute: every route the router serves is an operation of the OpenAPI document
// it serves, and every operation of the document is a route the mux takes (no 404, no 405), for the
// operator's API and for the portal (whose document and routes omit the operator-only ones).
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	for _, portal := range []bool{false, true} {
		rt := newRouter(fakeBackend{}, log, portal)
		var h http.Handler = NewHandler(fakeBackend{}, log)
		token := ""
		if portal {
			h, token = NewPortal(fakeBackend{}, log), "good-acme"
		}
		rec := serve(h, "GET", "/openapi.json", "", "")
		require.Equal(t, http.StatusOK, rec.Code, "portal %t: the document needs no token", portal)
		require.Equal(t, rt.spec, []byte(strings.TrimSuffix(rec.Body.String(), "\n")))
		spec := specOperations(t, rec.Body.Bytes())
		assert.Equal(t, servedOperations(portal), spec, "portal %t: routes and documented operations", portal)
		for _, op := range spec {
			method, path, _ := strings.Cut(op, " ")
			req := httptest.NewRequest(method, strings.ReplaceAll(path, "{id}", "x"), nil)
			_, pattern := rt.mux.Handler(req)
			assert.Equal(t, op, pattern, "portal %t: the mux routes %s to its pattern", portal, op)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.NotContains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, rec.Code, "portal %t: %s is served", portal, op)
		}
	}
}

// TestPortalOmitsOperatorRoutes: the portal neither serves nor documents an operator-only route.
func TestPortalOmitsOperatorRoutes(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	portal := NewPortal(fakeBackend{}, log)
	doc := serve(portal, "GET", "/openapi.json", "", "").Body.Bytes()
	ops := specOperations(t, doc)
	for _, r := range routes {
		if !r.operatorOnly {
			continue
		}
		assert.NotContains(t, ops, r.pattern)
		method, path, _ := strings.Cut(r.pattern, " ")
		rec := serve(portal, method, strings.ReplaceAll(path, "{id}", "x"), "good-acme", "")
		assert.Contains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, rec.Code, "the portal does not serve %s", r.pattern)
	}
}
