package webhooks

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOAuth2TokenSharedByReplicas: three Dispatchers on clients of their own dispatch concurrently to
// a webhook with OAuth2 client credentials. The token endpoint (the test's own) issues one token for
// all of them; one more once it expires; and when the endpoint refuses the token (401), exactly one
// more, with which every request is sent again and accepted.
func TestOAuth2TokenSharedByReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	clock := newTestClock()
	ts := newTokenServer(t, "client-7", "secret-7", 3600)
	endpoint, accepted := ts.endpoint(t)
	var replicas []*Dispatcher
	for range 3 {
		d := newTestDispatcherOn(t, tr.newClient(t), tr, Options{SecretKeys: [][]byte{secretKey(3)}})
		d.now = clock.Now
		replicas = append(replicas, d)
	}
	_, err := replicas[0].Webhooks().Create(ctx, Webhook{URL: endpoint.URL, Events: []string{"o.*"},
		Auth: &EndpointAuth{OAuth2: &OAuth2ClientCredentials{TokenURL: ts.srv.URL, ClientID: "client-7", ClientSecret: "secret-7",
			Scopes: []string{"hooks:write", "hooks:read"}, Audience: "https://api.example"}}})
	require.NoError(t, err)

	round := 0
	dispatchAll := func() {
		t.Helper()
		round++
		var wg sync.WaitGroup
		for i, d := range replicas {
			for j := range 2 {
				wg.Go(func() {
					res, err := d.Dispatch(ctx, Event{Type: "o.x", ID: fmt.Sprintf("r%d-%d-%d", round, i, j)})
					if assert.NoError(t, err) && assert.Len(t, res, 1) {
						assert.Equal(t, StatusSuccess, res[0].Delivery.Status, res[0].Delivery.LastError)
					}
				})
			}
		}
		wg.Wait()
	}
	dispatchAll()
	assert.EqualValues(t, 1, ts.issued.Load(), "one token for every replica")
	assert.EqualValues(t, 6, accepted.Load())
	dispatchAll()
	assert.EqualValues(t, 1, ts.issued.Load(), "cached")

	clock.Advance(time.Hour)
	dispatchAll()
	assert.EqualValues(t, 2, ts.issued.Load(), "one more after it expires")

	ts.revokeAll()
	dispatchAll()
	assert.EqualValues(t, 3, ts.issued.Load(), "a 401 refreshes it once, across replicas")
	assert.EqualValues(t, 24, accepted.Load(), "every request sent again with the new token was accepted")
	ts.mu.Lock()
	assert.Equal(t, []string{"hooks:write hooks:read|https://api.example"}, ts.forms[:1])
	ts.mu.Unlock()
}

// TestOAuth2TokenEndpointFailure: a token endpoint that refuses the client leaves the delivery
// pending with an error that names the status and no credential, and nothing reaches the endpoint.
func TestOAuth2TokenEndpointFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	ts := newTokenServer(t, "client-8", "right-secret", 60)
	endpoint, accepted := ts.endpoint(t)
	_, err := d.Webhooks().Create(ctx, Webhook{URL: endpoint.URL, Events: []string{"o.*"},
		Auth: &EndpointAuth{OAuth2: &OAuth2ClientCredentials{TokenURL: ts.srv.URL, ClientID: "client-8", ClientSecret: "wrong-secret"}}})
	require.NoError(t, err)
	res, err := d.Dispatch(ctx, Event{Type: "o.x", ID: "e1"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, StatusPending, res[0].Delivery.Status)
	assert.Contains(t, res[0].Delivery.LastError, "HTTP 401")
	assert.NotContains(t, res[0].Delivery.LastError, "wrong-secret")
	assert.Zero(t, accepted.Load())
	assert.Zero(t, ts.issued.Load())
}

// TestOAuth2LateRefusalKeepsNewToken: a replica whose 401 comes after another replica replaced the
// refused token does not drop the new one (no second refresh).
func TestOAuth2LateRefusalKeepsNewToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	ts := newTokenServer(t, "c", "s", 3600)
	ts.delay = 0
	a, b := newTestDispatcher(t, tr, Options{}), newTestDispatcher(t, tr, Options{})
	wh, err := a.Webhooks().Create(ctx, Webhook{URL: ts.srv.URL, Events: []string{"o.*"},
		Auth: &EndpointAuth{OAuth2: &OAuth2ClientCredentials{TokenURL: ts.srv.URL, ClientID: "c", ClientSecret: "s"}}})
	require.NoError(t, err)
	s := &storedWebhook{Webhook: *wh}
	first, err := a.auth.tokens.get(ctx, s)
	require.NoError(t, err)
	late, err := b.auth.tokens.get(ctx, s)
	require.NoError(t, err)
	require.Equal(t, first.token, late.token)
	require.NoError(t, a.auth.tokens.drop(ctx, s, first))
	renewed, err := a.auth.tokens.get(ctx, s)
	require.NoError(t, err)
	require.NotEqual(t, first.token, renewed.token)
	require.NoError(t, b.auth.tokens.drop(ctx, s, late)) // B's 401 on the old token, late
	got, err := b.auth.tokens.get(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, renewed.token, got.token)
	assert.EqualValues(t, 2, ts.issued.Load())
}

// TestTokenResponseExpiresIn: expires_in is read as a number or a numeric string (PayPal and Azure AD
// v1 send "3599"), bounded by maxTokenLife; a missing, zero, negative or unreadable one means
// defaultTokenLife, and never makes a good token unusable.
func TestTokenResponseExpiresIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expiresIn string
		life      time.Duration
	}{
		{`3599`, 3599 * time.Second}, {`"3599"`, 3599 * time.Second}, {`60.5`, 60 * time.Second}, {`"60"`, time.Minute},
		{`0`, defaultTokenLife}, {`-5`, defaultTokenLife}, {`"soon"`, defaultTokenLife}, {`null`, defaultTokenLife},
		{`""`, defaultTokenLife}, {`99999999999999999999`, maxTokenLife}, {`"1e12"`, maxTokenLife},
	} {
		body := `{"access_token":"t0k","token_type":"Bearer","expires_in":` + tc.expiresIn + `}`
		tok, life, err := parseTokenResponse(strings.NewReader(body))
		require.NoError(t, err, tc.expiresIn)
		assert.Equal(t, "t0k", tok, tc.expiresIn)
		assert.Equal(t, tc.life, life, tc.expiresIn)
	}
	tok, life, err := parseTokenResponse(strings.NewReader(`{"access_token":"t0k"}`))
	require.NoError(t, err)
	assert.Equal(t, "t0k", tok)
	assert.Equal(t, defaultTokenLife, life, "no expires_in")
	_, _, err = parseTokenResponse(strings.NewReader(`{"access_token":"t0k","token_type":"mac"}`))
	assert.Error(t, err, "not a bearer token")
}
