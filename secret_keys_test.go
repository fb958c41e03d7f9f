package webhooks

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// secretsWorkload registers webhooks with every kind of secret and credential, rotates a secret, and
// delivers to the OAuth2 one (so its token is cached); it returns every secret value it made, by name.
func secretsWorkload(t *testing.T, d *Dispatcher) map[string]string {
	t.Helper()
	ctx := context.Background()
	rc := newReceiver(t)
	pki := newTestPKI(t)
	ts := newTokenServer(t, "client-1", "oauth-client-secret-9f8e7d6c5b4a", 3600)
	endpoint, accepted := ts.endpoint(t)
	certPEM, keyPEM := pki.issue(t, "client", x509.ExtKeyUsageClientAuth)
	needles := map[string]string{}
	create := func(name string, w Webhook) *Webhook {
		w.Events = []string{"at.rest"}
		if w.URL == "" {
			w.URL = rc.srv.URL
		}
		got, err := d.Webhooks().Create(ctx, w)
		require.NoError(t, err, name)
		needles[name+" secret"] = got.Secret
		_, body, _ := strings.Cut(got.Secret, "_")
		needles[name+" secret body"] = body
		return got
	}
	plain := create("hmac", Webhook{Headers: map[string]string{"X-Team": "core", "X-Api-Key": "header-api-key-31415926535"}})
	create("ed25519", Webhook{Asymmetric: true})
	create("basic", Webhook{Auth: &EndpointAuth{Basic: &BasicAuth{User: "alice", Password: "basic-password-4711-xyzzy"}}})
	create("bearer", Webhook{Auth: &EndpointAuth{Bearer: "bearer-token-0123456789abcdef"}})
	create("oauth2", Webhook{URL: endpoint.URL, Auth: &EndpointAuth{OAuth2: &OAuth2ClientCredentials{TokenURL: ts.srv.URL,
		ClientID: "client-1", ClientSecret: "oauth-client-secret-9f8e7d6c5b4a", Scopes: []string{"hooks"}}}})
	create("mtls", Webhook{Auth: &EndpointAuth{TLSClientCert: &ClientCert{Cert: certPEM, Key: keyPEM}}})
	rotated, err := d.Webhooks().RotateSecret(ctx, plain.ID, time.Hour)
	require.NoError(t, err)
	needles["rotated secret"] = rotated.Secret
	needles["basic password"], needles["bearer token"] = "basic-password-4711-xyzzy", "bearer-token-0123456789abcdef"
	needles["oauth2 client secret"] = "oauth-client-secret-9f8e7d6c5b4a"
	needles["custom header value"] = "header-api-key-31415926535"
	for i, line := range strings.Split(keyPEM, "\n") {
		if len(line) >= 40 && !strings.HasPrefix(line, "-----") {
			needles[fmt.Sprintf("client key line %d", i)] = line
		}
	}
	res, err := d.Dispatch(ctx, Event{Type: "at.rest", ID: "evt-1", Data: map[string]string{"k": "v"}})
	require.NoError(t, err)
	require.Len(t, res, 6)
	require.EqualValues(t, 1, accepted.Load(), "the OAuth2 webhook got its event with a token")
	ts.mu.Lock()
	for tok := range ts.valid {
		needles["oauth2 token"] = tok
	}
	ts.mu.Unlock()
	return needles
}

// TestSecretsAtRest runs a workload with secrets, a rotation, ed25519 keys, endpoint credentials and
// a cached OAuth2 token, then reads every key under the prefix: with SecretKeys, none of them is in
// any value; without (the control, which shows the search finds them), every one is.
func TestSecretsAtRest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		keys  [][]byte
		clear bool
	}{
		{"without SecretKeys, in clear", nil, true},
		{"with SecretKeys, sealed", [][]byte{secretKey(1)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTestRedis(t)
			d := newTestDispatcher(t, tr, Options{SecretKeys: tc.keys})
			needles := secretsWorkload(t, d)
			require.GreaterOrEqual(t, len(needles), 18)
			raw := rawKeyspace(t, tr.rdb, tr.prefix)
			require.NotEmpty(t, raw)
			for name, needle := range needles {
				require.GreaterOrEqual(t, len(needle), 20, name)
				var in []string
				for k, v := range raw {
					if bytes.Contains(v, []byte(needle)) {
						in = append(in, k)
					}
				}
				if tc.clear {
					assert.NotEmpty(t, in, "%s is stored in clear without SecretKeys", name)
				} else {
					assert.Empty(t, in, "%s found in clear in Redis", name)
				}
			}
			// The webhooks still read back whole.
			all, err := d.Webhooks().List(context.Background())
			require.NoError(t, err)
			require.Len(t, all, 6)
			for _, w := range all {
				assert.True(t, strings.HasPrefix(w.Secret, "whsec_") || strings.HasPrefix(w.Secret, "whsk_"), w.Secret)
			}
		})
	}
}

// TestWrongSecretKey: a Dispatcher whose SecretKeys do not hold the key a webhook was sealed under
// fails with ErrSecretKey, and sends nothing (never a wrongly signed request).
func TestWrongSecretKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		keys [][]byte
	}{{"another key", [][]byte{secretKey(2)}}, {"no key", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTestRedis(t)
			d := newTestDispatcher(t, tr, Options{SecretKeys: [][]byte{secretKey(1)}})
			rc := newReceiver(t)
			wh := mustCreate(t, d, rc, "k.*")
			wrong := newTestDispatcher(t, tr, Options{SecretKeys: tc.keys})
			_, err := wrong.Webhooks().Get(ctx, wh.ID)
			require.ErrorIs(t, err, ErrSecretKey)
			assert.NotContains(t, err.Error(), wh.Secret)
			_, err = wrong.Webhooks().Update(ctx, Webhook{ID: wh.ID, URL: rc.srv.URL, Events: []string{"k.x"}})
			require.ErrorIs(t, err, ErrSecretKey, "a webhook it cannot open is not rewritten")

			res, err := wrong.Dispatch(ctx, Event{Type: "k.x", ID: "e1"})
			require.NoError(t, err)
			require.Len(t, res, 1)
			dl, err := wrong.Deliveries().Get(ctx, res[0].Delivery.ID)
			require.NoError(t, err)
			assert.Contains(t, dl.LastError, ErrSecretKey.Error())
			assert.Zero(t, rc.count(), "nothing is sent with a secret it could not open")

			got, err := d.Webhooks().Get(ctx, wh.ID)
			require.NoError(t, err, "the right key still opens it")
			assert.Equal(t, wh.Secret, got.Secret)
		})
	}
}

// TestSecretKeyRotation: a new key first and the old one second opens everything; Reencrypt re-seals
// under the new key (a webhook stored in clear included), a second Reencrypt rewrites nothing, and
// then the old key can be dropped.
func TestSecretKeyRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	rc := newReceiver(t)
	clear := newTestDispatcher(t, tr, Options{})
	inClear := mustCreate(t, clear, rc, "r.*")
	old := newTestDispatcher(t, tr, Options{SecretKeys: [][]byte{secretKey(1)}})
	got, err := old.Webhooks().Get(ctx, inClear.ID)
	require.NoError(t, err, "a webhook stored in clear is read with keys set")
	assert.Equal(t, inClear.Secret, got.Secret)
	var hooks []*Webhook
	for range 5 {
		w, err := old.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"r.*"},
			Auth: &EndpointAuth{Bearer: "tok-" + randomHex(8)}})
		require.NoError(t, err)
		hooks = append(hooks, w)
	}
	hooks = append(hooks, inClear)

	both := newTestDispatcher(t, tr, Options{SecretKeys: [][]byte{secretKey(2), secretKey(1)}})
	n, err := both.Webhooks().Reencrypt(ctx)
	require.NoError(t, err)
	assert.Equal(t, 6, n, "five sealed under the old key, one in clear")
	before, err := tr.rdb.HGetAll(ctx, both.keys.Webhooks()).Result()
	require.NoError(t, err)
	n, err = both.Webhooks().Reencrypt(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "idempotent")
	after, err := tr.rdb.HGetAll(ctx, both.keys.Webhooks()).Result()
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing rewritten")

	newOnly := newTestDispatcher(t, tr, Options{SecretKeys: [][]byte{secretKey(2)}})
	for _, w := range hooks {
		got, err := newOnly.Webhooks().Get(ctx, w.ID)
		require.NoError(t, err, "the old key can be dropped")
		assert.Equal(t, w.Secret, got.Secret)
		assert.Equal(t, w.Auth, got.Auth)
	}
	_, err = old.Webhooks().Get(ctx, hooks[0].ID)
	assert.ErrorIs(t, err, ErrSecretKey, "re-sealed under the new key")
	res, err := newOnly.Dispatch(ctx, Event{Type: "r.x", ID: "e1"})
	require.NoError(t, err)
	require.Len(t, res, 6)
	for _, r := range res {
		require.NoError(t, r.Err)
		assert.Equal(t, StatusSuccess, r.Delivery.Status)
	}
	for _, req := range rc.requests() {
		assert.Contains(t, req.Header.Get("Webhook-Signature"), "v1,")
	}
}

// TestSealedValuesAreBoundToTheirWebhook: a sealed secret copied into another webhook's JSON does
// not open there.
func TestSealedValuesAreBoundToTheirWebhook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{SecretKeys: [][]byte{secretKey(1)}})
	rc := newReceiver(t)
	a, b := mustCreate(t, d, rc, "x.*"), mustCreate(t, d, rc, "x.*")
	key := d.keys.Webhooks()
	rawA, err := tr.rdb.HGet(ctx, key, a.ID).Result()
	require.NoError(t, err)
	rawB, err := tr.rdb.HGet(ctx, key, b.ID).Result()
	require.NoError(t, err)
	sealedA := between(t, rawA, `"secret":"`, `"`)
	sealedB := between(t, rawB, `"secret":"`, `"`)
	require.True(t, strings.HasPrefix(sealedA, "enc:v1:"))
	require.NoError(t, tr.rdb.HSet(ctx, key, b.ID, strings.Replace(rawB, sealedB, sealedA, 1)).Err())
	_, err = d.Webhooks().Get(ctx, b.ID)
	assert.ErrorIs(t, err, ErrSecretKey)
}

func between(t *testing.T, s, from, to string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, from)
	require.True(t, ok)
	v, _, ok := strings.Cut(rest, to)
	require.True(t, ok)
	return v
}

func TestSecretKeysOption(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	for _, keys := range [][][]byte{{[]byte("short")}, {secretKey(1), make([]byte, 33)}} {
		_, err := New(tr.rdb, Options{KeyPrefix: tr.prefix, SecretKeys: keys})
		assert.ErrorIs(t, err, ErrInvalidOptions)
	}
}

// TestSealedHeaderValuesAreSent: with SecretKeys, a custom header's value is sealed in Redis yet sent in
// clear with the attempt, and a value moved to another header's name does not open (it is bound to its
// webhook and header).
func TestSealedHeaderValuesAreSent(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{SecretKeys: [][]byte{secretKey(1)}})
	rc := newReceiver(t)
	ctx := context.Background()
	w, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"},
		Headers: map[string]string{"X-Api-Key": "k3y-value-2718281828", "X-Team": "core"}})
	require.NoError(t, err)
	_, err = d.Dispatch(ctx, Event{Type: "a.b", ID: "e1"})
	require.NoError(t, err)
	require.Equal(t, 1, rc.count())
	assert.Equal(t, "k3y-value-2718281828", rc.requests()[0].Header.Get("X-Api-Key"))
	assert.Equal(t, "core", rc.requests()[0].Header.Get("X-Team"))

	// Swap the two sealed values in the stored JSON: neither opens under the other's name.
	raw, err := tr.rdb.HGet(ctx, d.keys.Webhooks(), w.ID).Result()
	require.NoError(t, err)
	var stored map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(raw), &stored))
	var headers map[string]string
	require.NoError(t, json.Unmarshal(stored["headers"], &headers))
	require.NotContains(t, headers["X-Api-Key"], "k3y-value", "sealed at rest")
	headers["X-Api-Key"], headers["X-Team"] = headers["X-Team"], headers["X-Api-Key"]
	stored["headers"], err = json.Marshal(headers)
	require.NoError(t, err)
	swapped, err := json.Marshal(stored)
	require.NoError(t, err)
	require.NoError(t, tr.rdb.HSet(ctx, d.keys.Webhooks(), w.ID, swapped).Err())
	other := newTestDispatcher(t, tr, Options{SecretKeys: [][]byte{secretKey(1)}}) // no cached registry
	_, err = other.Webhooks().Get(ctx, w.ID)
	require.ErrorIs(t, err, ErrSecretKey, "a sealed value moved to another header does not open")
}
