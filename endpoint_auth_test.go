package webhooks

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEndpointAuthValidation(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	pki := newTestPKI(t)
	cert, key := pki.issue(t, "client", x509.ExtKeyUsageClientAuth)
	_, otherKey := pki.issue(t, "other", x509.ExtKeyUsageClientAuth)
	oauth := func(o OAuth2ClientCredentials) *EndpointAuth { return &EndpointAuth{OAuth2: &o} }
	okOAuth := OAuth2ClientCredentials{TokenURL: rc.srv.URL, ClientID: "c", ClientSecret: "s"}
	for _, tc := range []struct {
		name    string
		auth    *EndpointAuth
		headers map[string]string
		ok      bool
	}{
		{"none", nil, nil, true},
		{"basic", &EndpointAuth{Basic: &BasicAuth{User: "u", Password: "p"}}, nil, true},
		{"bearer", &EndpointAuth{Bearer: "t0k"}, nil, true},
		{"oauth2", oauth(okOAuth), nil, true},
		{"tls", &EndpointAuth{TLSClientCert: &ClientCert{Cert: cert, Key: key, CACert: pki.caPEM}}, nil, true},
		{"custom Authorization without auth", nil, map[string]string{"Authorization": "x"}, true},
		{"tls beside a custom Authorization", &EndpointAuth{TLSClientCert: &ClientCert{Cert: cert, Key: key}},
			map[string]string{"Authorization": "x"}, true},
		{"empty auth", &EndpointAuth{}, nil, false},
		{"two methods", &EndpointAuth{Bearer: "t", Basic: &BasicAuth{User: "u", Password: "p"}}, nil, false},
		{"the API's view", &EndpointAuth{Type: "bearer", Set: true}, nil, false},
		{"view beside credentials: ignored", &EndpointAuth{Bearer: "t", Set: true}, nil, true},
		{"basic without password", &EndpointAuth{Basic: &BasicAuth{User: "u"}}, nil, false},
		{"basic user with colon", &EndpointAuth{Basic: &BasicAuth{User: "u:v", Password: "p"}}, nil, false},
		{"bearer with a line break", &EndpointAuth{Bearer: "t\r\nX-Evil: 1"}, nil, false},
		{"bearer with a space", &EndpointAuth{Bearer: "a b"}, nil, false},
		{"bearer too long", &EndpointAuth{Bearer: strings.Repeat("a", MaxAuthValueLen+1)}, nil, false},
		{"bearer beside a custom Authorization", &EndpointAuth{Bearer: "t"}, map[string]string{"Authorization": "x"}, false},
		{"basic beside custom authorization alias", &EndpointAuth{Basic: &BasicAuth{User: "u", Password: "p"}},
			map[string]string{"authorization": "x"}, false},
		{"oauth2 beside custom Authorization", oauth(okOAuth), map[string]string{"Authorization": "x"}, false},
		{"oauth2 without secret", oauth(OAuth2ClientCredentials{TokenURL: rc.srv.URL, ClientID: "c"}), nil, false},
		{"oauth2 bad token URL", oauth(OAuth2ClientCredentials{TokenURL: "ftp://x", ClientID: "c", ClientSecret: "s"}), nil, false},
		{"oauth2 token URL with credentials", oauth(OAuth2ClientCredentials{TokenURL: "http://u:p@127.0.0.1:1/t", ClientID: "c",
			ClientSecret: "s"}), nil, false},
		{"oauth2 bad scope", oauth(OAuth2ClientCredentials{TokenURL: rc.srv.URL, ClientID: "c", ClientSecret: "s",
			Scopes: []string{"a b"}}), nil, false},
		{"oauth2 as many scopes as allowed", oauth(OAuth2ClientCredentials{TokenURL: rc.srv.URL, ClientID: "c", ClientSecret: "s",
			Scopes: slices.Repeat([]string{"s"}, MaxOAuth2Scopes)}), nil, true},
		{"oauth2 too many scopes", oauth(OAuth2ClientCredentials{TokenURL: rc.srv.URL, ClientID: "c", ClientSecret: "s",
			Scopes: slices.Repeat([]string{"s"}, MaxOAuth2Scopes+1)}), nil, false},
		{"oauth2 a scope of 1 MiB", oauth(OAuth2ClientCredentials{TokenURL: rc.srv.URL, ClientID: "c", ClientSecret: "s",
			Scopes: []string{strings.Repeat("s", 1<<20)}}), nil, false},
		{"oauth2 scopes longer together than a value", oauth(OAuth2ClientCredentials{TokenURL: rc.srv.URL, ClientID: "c",
			ClientSecret: "s", Scopes: slices.Repeat([]string{strings.Repeat("s", 100)}, 41)}), nil, false},
		{"oauth2 audience too long", oauth(OAuth2ClientCredentials{TokenURL: rc.srv.URL, ClientID: "c", ClientSecret: "s",
			Audience: strings.Repeat("a", MaxAuthValueLen+1)}), nil, false},
		{"tls key of another cert", &EndpointAuth{TLSClientCert: &ClientCert{Cert: cert, Key: otherKey}}, nil, false},
		{"tls not PEM", &EndpointAuth{TLSClientCert: &ClientCert{Cert: "x", Key: "y"}}, nil, false},
		{"tls bad CA", &EndpointAuth{TLSClientCert: &ClientCert{Cert: cert, Key: key, CACert: "nope"}}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.Webhooks().Create(context.Background(), Webhook{URL: rc.srv.URL, Events: []string{"a"}, Auth: tc.auth,
				Headers: tc.headers})
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidWebhook)
			for _, secret := range []string{"t\r\nX-Evil", "t0k", key, otherKey} {
				assert.NotContains(t, err.Error(), secret, "errors never carry a credential")
			}
		})
	}
}

// TestBasicAndBearerAuth: each sends its Authorization header, which no custom header can change,
// and no log line carries the credentials.
func TestBasicAndBearerAuth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs bytes.Buffer
	var logMu sync.Mutex
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu},
		&slog.HandlerOptions{Level: slog.LevelDebug})), RetrySchedule: []time.Duration{time.Millisecond}})
	for _, tc := range []struct {
		auth *EndpointAuth
		want string
	}{
		{&EndpointAuth{Basic: &BasicAuth{User: "alice", Password: "s3cret-pass"}},
			"Basic " + base64.StdEncoding.EncodeToString([]byte("alice:s3cret-pass"))},
		{&EndpointAuth{Bearer: "bearer-s3cret"}, "Bearer bearer-s3cret"},
	} {
		rc := newReceiver(t)
		rc.status.Store(http.StatusInternalServerError) // failures are what gets logged
		_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"a.b"}, Auth: tc.auth,
			Headers: map[string]string{"X-Team": "core"}})
		require.NoError(t, err)
		_, err = d.Dispatch(ctx, Event{Type: "a.b", ID: "e-" + types.AuthKinds(tc.auth)[0]})
		require.NoError(t, err)
		reqs := rc.requests()
		require.Len(t, reqs, 1)
		assert.Equal(t, []string{tc.want}, reqs[0].Header.Values("Authorization"))
		assert.Equal(t, "core", reqs[0].Header.Get("X-Team"))
	}
	logMu.Lock()
	defer logMu.Unlock()
	for _, secret := range []string{"s3cret-pass", "bearer-s3cret", base64.StdEncoding.EncodeToString([]byte("alice:s3cret-pass"))} {
		assert.NotContains(t, logs.String(), secret)
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// TestAuthIsWriteOnlyInTheAPI: the admin API and the portal set auth, show it as its type and
// "set", never its credentials; a PATCH that sends the view back keeps them.
func TestAuthIsWriteOnlyInTheAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	rc := newReceiver(t)
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	for _, h := range []struct {
		name    string
		handler http.Handler
		token   string
	}{{"admin", d.Handler(), ""}, {"portal", d.Portal(), token}} {
		t.Run(h.name, func(t *testing.T) {
			call := func(method, path, body string, want int) map[string]any {
				t.Helper()
				req := httptest.NewRequestWithContext(ctx, method, path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if h.token != "" {
					req.Header.Set("Authorization", "Bearer "+h.token)
				}
				w := httptest.NewRecorder()
				h.handler.ServeHTTP(w, req)
				require.Equal(t, want, w.Code, w.Body.String())
				for _, secret := range []string{"pw-0451", "tok-0452"} {
					require.NotContains(t, w.Body.String(), secret, "%s %s shows a credential", method, path)
				}
				var out map[string]any
				_ = json.Unmarshal(w.Body.Bytes(), &out)
				return out
			}
			created := call(http.MethodPost, "/webhooks", `{"url":"`+rc.srv.URL+`","events":["a.*"],
				"auth":{"basic":{"user":"bob","password":"pw-0451"}}}`, http.StatusCreated)
			id := created["id"].(string)
			assert.Equal(t, map[string]any{"type": "basic", "set": true}, created["auth"])
			got := call(http.MethodGet, "/webhooks/"+id, "", http.StatusOK)
			assert.Equal(t, map[string]any{"type": "basic", "set": true}, got["auth"])
			list := call(http.MethodGet, "/webhooks", "", http.StatusOK)
			assert.NotEmpty(t, list)

			// The view sent back keeps the credentials.
			got["description"] = "changed"
			body, err := json.Marshal(got)
			require.NoError(t, err)
			call(http.MethodPatch, "/webhooks/"+id, string(body), http.StatusOK)
			stored, err := d.Webhooks().Get(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, &BasicAuth{User: "bob", Password: "pw-0451"}, stored.Auth.Basic)
			assert.Equal(t, "changed", stored.Description)

			// A view of another type is refused; new credentials replace; null clears.
			call(http.MethodPatch, "/webhooks/"+id, `{"auth":{"type":"bearer","set":true}}`, http.StatusBadRequest)
			patched := call(http.MethodPatch, "/webhooks/"+id, `{"auth":{"bearer":"tok-0452"}}`, http.StatusOK)
			assert.Equal(t, map[string]any{"type": "bearer", "set": true}, patched["auth"])
			stored, err = d.Webhooks().Get(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, "tok-0452", stored.Auth.Bearer)
			assert.Nil(t, stored.Auth.Basic)
			patched = call(http.MethodPatch, "/webhooks/"+id, `{"auth":null}`, http.StatusOK)
			assert.Nil(t, patched["auth"])
			stored, err = d.Webhooks().Get(ctx, id)
			require.NoError(t, err)
			assert.Nil(t, stored.Auth)
		})
	}
}

// TestAuthIsNotPrinted: no fmt verb prints a credential, of a webhook or of its Auth.
func TestAuthIsNotPrinted(t *testing.T) {
	t.Parallel()
	for _, a := range []*EndpointAuth{
		{Basic: &BasicAuth{User: "u", Password: "pw-secret"}},
		{Bearer: "bearer-secret"},
		{OAuth2: &OAuth2ClientCredentials{TokenURL: "https://x", ClientID: "c", ClientSecret: "client-secret"}},
		{TLSClientCert: &ClientCert{Cert: "cert", Key: "key-secret"}},
	} {
		w := Webhook{ID: "wh_1", Auth: a}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			for _, v := range []any{w, &w, a, *a, a.Basic, a.OAuth2, a.TLSClientCert} {
				out := fmt.Sprintf(verb, v)
				for _, secret := range []string{"pw-secret", "bearer-secret", "client-secret", "key-secret"} {
					assert.NotContains(t, out, secret, verb)
				}
			}
		}
	}
}
