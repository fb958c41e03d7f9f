package api

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestForgeableRequestsAreRefused: what a cross-site page can make a browser send with the operator's
// (or a portal user's) ambient credentials is refused before any route runs — an unsafe request that
// the browser says comes from another site or origin, and a body not declared JSON (a form's
// text/plain, urlencoded or multipart, which need no preflight) — on the operator's API and the
// portal alike; same-origin requests, safe methods and clients that are not browsers pass.
func TestForgeableRequestsAreRefused(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	handlers := map[string]http.Handler{"operator": NewHandler(fakeBackend{}, log), "portal": NewPortal(fakeBackend{}, log)}
	const form = `{"url":"https://evil.example/x","events":["*"]}`
	for _, tc := range []struct {
		name, method, target, body, contentType string
		header                                  map[string]string
		want                                    int
	}{
		{"cross-site form with a JSON body", "POST", "/webhooks", form, "text/plain", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"cross-site JSON", "POST", "/webhooks", form, "application/json", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site, other origin", "PATCH", "/webhooks/x", `{}`, "application/json", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"body-less action from another site", "POST", "/webhooks/x/rotate-secret", "", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"delete from another site", "DELETE", "/webhooks/x", "", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"an older browser's Origin naming another host", "POST", "/webhooks/x/test", "", "", map[string]string{"Origin": "https://evil.example"}, 403},
		{"text/plain body, no browser headers", "POST", "/webhooks", form, "text/plain", nil, 415},
		{"urlencoded body", "POST", "/webhooks", "url=x", "application/x-www-form-urlencoded", nil, 415},
		{"multipart body", "PATCH", "/webhooks/x", "--b\r\n", "multipart/form-data; boundary=b", nil, 415},
		{"body with no Content-Type", "POST", "/webhooks", form, "", nil, 415},
		{"same-origin JSON", "POST", "/webhooks", form, "application/json", map[string]string{"Sec-Fetch-Site": "same-origin"}, 201},
		{"JSON with a charset", "PATCH", "/webhooks/x", `{}`, "application/json; charset=utf-8", nil, 200},
		{"same-origin body-less action", "POST", "/webhooks/x/test", "", "", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://example.com"}, 202},
		{"a cross-site read", "GET", "/webhooks/x", "", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 200},
		{"a client that is not a browser", "POST", "/webhooks/x/rotate-secret", "", "", nil, 200},
	} {
		for name, h := range handlers {
			req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer good-acme")
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.Equal(t, tc.want, rec.Code, "%s: %s: %s", name, tc.name, rec.Body.String())
			switch tc.want {
			case http.StatusForbidden:
				assert.Contains(t, rec.Body.String(), `"code":"cross_origin"`, "%s: %s", name, tc.name)
			case http.StatusUnsupportedMediaType:
				assert.Contains(t, rec.Body.String(), `"code":"unsupported_media_type"`, "%s: %s", name, tc.name)
			}
		}
	}
}
