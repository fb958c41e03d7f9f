package webhooks

import (
	"context"
	"fmt"
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
	first, err := a.dests.http.Auth().Tokens.Get(ctx, s.ID, s.Auth.OAuth2)
	require.NoError(t, err)
	late, err := b.dests.http.Auth().Tokens.Get(ctx, s.ID, s.Auth.OAuth2)
	require.NoError(t, err)
	require.Equal(t, first.Value, late.Value)
	require.NoError(t, a.dests.http.Auth().Tokens.Drop(ctx, s.ID, first))
	renewed, err := a.dests.http.Auth().Tokens.Get(ctx, s.ID, s.Auth.OAuth2)
	require.NoError(t, err)
	require.NotEqual(t, first.Value, renewed.Value)
	require.NoError(t, b.dests.http.Auth().Tokens.Drop(ctx, s.ID, late)) // B's 401 on the old token, late
	got, err := b.dests.http.Auth().Tokens.Get(ctx, s.ID, s.Auth.OAuth2)
	require.NoError(t, err)
	assert.Equal(t, renewed.Value, got.Value)
	assert.EqualValues(t, 2, ts.issued.Load())
}
