package webhooks

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// portalRoutes is every API route of the portal, with ids that exist for the token's tenant.
func portalRoutes(webhookID, deliveryID string) [][2]string {
	return [][2]string{
		{"POST", "/webhooks"}, {"GET", "/webhooks"}, {"GET", "/webhooks/" + webhookID},
		{"PATCH", "/webhooks/" + webhookID}, {"DELETE", "/webhooks/" + webhookID},
		{"POST", "/webhooks/" + webhookID + "/test"}, {"POST", "/webhooks/" + webhookID + "/rotate-secret"},
		{"GET", "/webhooks/" + webhookID + "/deliveries"}, {"POST", "/webhooks/" + webhookID + "/recover"},
		{"GET", "/webhooks/" + webhookID + "/secret"}, {"GET", "/webhooks/" + webhookID + "/health"},
		{"GET", "/webhooks/" + webhookID + "/stats"}, {"GET", "/deliveries/" + deliveryID},
		{"POST", "/deliveries/" + deliveryID + "/redeliver"},
	}
}

// rawPortalRequest serves a request read off the wire, as a server would parse it (the path as sent,
// escapes included), through the portal.
func rawPortalRequest(portal http.Handler, method, target, token string) (*httptest.ResponseRecorder, bool) {
	raw := method + " " + target + " HTTP/1.1\r\nHost: portal.test\r\n"
	if token != "" {
		raw += "Authorization: Bearer " + token + "\r\n"
	}
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw + "\r\n")))
	if err != nil {
		return nil, false
	}
	rec := httptest.NewRecorder()
	portal.ServeHTTP(rec, req)
	return rec, true
}

// TestPortalAuthenticatesTheRoutedPath: without a token, every API route answers 401, also when its
// path is spelled so that it cleans to /ui (the escaped separators the router does not read as
// separators); the UI's files need none.
func TestPortalAuthenticatesTheRoutedPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	rc := newReceiver(t)
	wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "acme"})
	require.NoError(t, err)
	res, err := d.Dispatch(ctx, Event{Tenant: "acme", Type: "x", ID: "1"})
	require.NoError(t, err)
	portal := d.Portal()
	targets := [][2]string{
		{"GET", "/webhooks/x%2F..%2F..%2Fui"}, {"GET", "/webhooks/x%2F..%2F..%2Fui/"},
		{"GET", "/webhooks/" + wh.ID + "%2F..%2F..%2Fui%2Fapp.js"}, {"GET", "/deliveries/x%2F..%2F..%2Fui"},
		{"HEAD", "/webhooks/x%2F..%2F..%2Fui"}, {"GET", "/ui/../webhooks"},
	}
	targets = append(targets, portalRoutes(wh.ID, res[0].Delivery.ID)...)
	for _, tc := range targets {
		rec, ok := rawPortalRequest(portal, tc[0], tc[1], "")
		require.True(t, ok, "%s %s", tc[0], tc[1])
		assert.Equal(t, http.StatusUnauthorized, rec.Code, "%s %s without a token: %s", tc[0], tc[1], rec.Body)
	}
	for _, target := range []string{"/ui/", "/ui/app.js", "/ui/app.css", "/ui/index.html"} {
		rec, _ := rawPortalRequest(portal, "GET", target, "")
		assert.Equal(t, http.StatusOK, rec.Code, target)
	}
}

// FuzzPortalPaths: a request without a token is answered 401, or by the UI's handlers (whose answers,
// and only theirs, carry UIContentSecurityPolicy); never by an API route.
func FuzzPortalPaths(f *testing.F) {
	tr := newTestRedis(f)
	d := newTestDispatcher(f, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	wh, err := d.Webhooks().Create(context.Background(), Webhook{URL: "https://example.com/", Events: []string{"*"}, Tenant: "acme"})
	if err != nil {
		f.Fatal(err)
	}
	portal := d.Portal()
	for _, seed := range []string{"/webhooks/x%2F..%2F..%2Fui", "/ui/", "/ui", "/ui/../webhooks", "//ui/app.js",
		"/webhooks/" + wh.ID, "/webhooks/" + wh.ID + "%2F..%2F..%2Fui", "/deliveries/a%2f..%2f..%2fui/x", "/ui/%2e%2e/webhooks",
		"/./ui/", "/webhooks/../ui/app.js", "/ui/.%2e/deliveries/x"} {
		for _, method := range []string{"GET", "HEAD", "POST", "PATCH", "DELETE"} {
			f.Add(method, seed)
		}
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		if method == "" || strings.ContainsAny(method+target, " \r\n") {
			return
		}
		rec, ok := rawPortalRequest(portal, method, target, "")
		if !ok {
			return
		}
		if rec.Code != http.StatusUnauthorized && rec.Header().Get("Content-Security-Policy") != UIContentSecurityPolicy {
			t.Fatalf("%s %s without a token: %d from an API route: %s", method, target, rec.Code, rec.Body)
		}
	})
}

// TestHeaderValuesAreWriteOnly: no answer of Handler or Portal holds a custom header's value (GET
// list, GET one, create, PATCH, rotate-secret): each header is listed with the value "". A PATCH that
// sends a header back with "" keeps its value; one that sets a value changes it.
func TestHeaderValuesAreWriteOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	key := []byte(strings.Repeat("k", 32))
	d := newTestDispatcher(t, tr, Options{PortalKey: key})
	rc := newReceiver(t)
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	for name, h := range map[string]http.Handler{"handler": d.Handler(), "portal": d.Portal()} {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		call := func(method, path, body string) (int, string) {
			t.Helper()
			return portalCall(t, srv, token, method, path, body)
		}
		status, created := call("POST", "/webhooks", `{"url":"`+rc.srv.URL+`","events":["*"],"tenant":"`+
			map[string]string{"handler": "acme", "portal": ""}[name]+`","headers":{"X-Api-Key":"s3cret-`+name+`","X-Team":"billing"}}`)
		require.Equal(t, http.StatusCreated, status, "%s: %s", name, created)
		var w Webhook
		decodeJSON(t, created, &w)
		answers := []string{created}
		for _, c := range [][3]string{{"GET", "/webhooks", ""}, {"GET", "/webhooks/" + w.ID, ""},
			{"PATCH", "/webhooks/" + w.ID, `{"description":"d","headers":{"X-Api-Key":"","X-Team":"payments"}}`},
			{"POST", "/webhooks/" + w.ID + "/rotate-secret", ""}} {
			status, body := call(c[0], c[1], c[2])
			require.Equal(t, http.StatusOK, status, "%s %s %s: %s", name, c[0], c[1], body)
			answers = append(answers, body)
		}
		for i, body := range answers {
			assert.NotContains(t, body, "s3cret", "%s answer %d", name, i)
			assert.NotContains(t, body, "billing", "%s answer %d", name, i)
			assert.NotContains(t, body, "payments", "%s answer %d", name, i)
			assert.Contains(t, body, `"X-Api-Key":""`, "%s answer %d lists the header as set", name, i)
		}
		stored, err := d.Webhooks().Get(ctx, w.ID)
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"X-Api-Key": "s3cret-" + name, "X-Team": "payments"}, stored.Headers, name)
		status, body := call("PATCH", "/webhooks/"+w.ID, `{"headers":{"X-New":""}}`)
		assert.Equal(t, http.StatusBadRequest, status, "%s: a new header needs a value: %s", name, body)
	}
}

// TestURLChangeTakesNoCredentialsAlong: a PATCH that moves a webhook to another URL cannot take its
// write-only values there: the custom headers and Auth it does not give again are dropped (a test send
// to the new URL carries neither), and sending them back as kept ("" values, Auth's view) is refused
// with the field named; values given in the same PATCH are used; a PATCH that keeps the URL keeps them.
// On Handler and Portal alike.
func TestURLChangeTakesNoCredentialsAlong(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	home, elsewhere := newReceiver(t), newReceiver(t)
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	for name, h := range map[string]http.Handler{"handler": d.Handler(), "portal": d.Portal()} {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		call := func(method, path, body string) (int, string) {
			t.Helper()
			return portalCall(t, srv, token, method, path, body)
		}
		create := func() string {
			t.Helper()
			tenant := map[string]string{"handler": "acme", "portal": ""}[name]
			status, body := call("POST", "/webhooks", `{"url":"`+home.srv.URL+`","events":["*"],"tenant":"`+tenant+
				`","headers":{"X-Api-Key":"s3cret"},"auth":{"bearer":"t0ken"}}`)
			require.Equal(t, http.StatusCreated, status, body)
			var w Webhook
			decodeJSON(t, body, &w)
			return w.ID
		}
		sentTo := func(rc *receiver) http.Header {
			t.Helper()
			rs := rc.requests()
			require.NotEmpty(t, rs)
			return rs[len(rs)-1].Header
		}

		id := create()
		status, body := call("PATCH", "/webhooks/"+id, `{"description":"same URL"}`)
		require.Equal(t, http.StatusOK, status, body)
		stored, err := d.Webhooks().Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, "s3cret", stored.Headers["X-Api-Key"], "%s: the URL kept, the header kept", name)
		require.NotNil(t, stored.Auth, name)

		for _, tc := range []struct{ patch, field string }{
			{`{"url":"` + elsewhere.srv.URL + `","headers":{"X-Api-Key":""}}`, "headers"},
			{`{"url":"` + elsewhere.srv.URL + `","auth":{"type":"bearer","set":true}}`, "auth"},
		} {
			status, body := call("PATCH", "/webhooks/"+id, tc.patch)
			assert.Equal(t, http.StatusBadRequest, status, "%s: %s: %s", name, tc.patch, body)
			assert.Contains(t, body, `"field":"`+tc.field+`"`, "%s: %s", name, tc.patch)
		}

		status, body = call("PATCH", "/webhooks/"+id, `{"url":"`+elsewhere.srv.URL+`"}`)
		require.Equal(t, http.StatusOK, status, "%s: %s", name, body)
		stored, err = d.Webhooks().Get(ctx, id)
		require.NoError(t, err)
		assert.Empty(t, stored.Headers, "%s: headers dropped with the URL change", name)
		assert.Nil(t, stored.Auth, "%s: auth dropped with the URL change", name)
		before := len(elsewhere.requests())
		status, body = call("POST", "/webhooks/"+id+"/test", "")
		require.Contains(t, []int{http.StatusCreated, http.StatusAccepted}, status, "%s: %s", name, body)
		eventually(t, 5*time.Second, func() bool { return len(elsewhere.requests()) > before }, "the test send reaches the new URL")
		got := sentTo(elsewhere)
		assert.Empty(t, got.Get("X-Api-Key"), "%s: the old header's value is not sent to the new URL", name)
		assert.Empty(t, got.Get("Authorization"), "%s: the old credentials are not sent to the new URL", name)

		id = create()
		status, body = call("PATCH", "/webhooks/"+id, `{"url":"`+elsewhere.srv.URL+`","headers":{"X-Api-Key":"n3w"},"auth":{"bearer":"n3w-t0ken"}}`)
		require.Equal(t, http.StatusOK, status, "%s: %s", name, body)
		stored, err = d.Webhooks().Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, "n3w", stored.Headers["X-Api-Key"], name)
		require.NotNil(t, stored.Auth, name)
		assert.Equal(t, "n3w-t0ken", stored.Auth.Bearer, name)
	}
}
