package webhooks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTLSClientCert delivers to an HTTPS endpoint that requires a client certificate signed by the
// test's CA: a webhook with one succeeds, over a client pooled per certificate; one without, or with
// a certificate of another CA, is refused in the handshake.
func TestTLSClientCert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	pki := newTestPKI(t)
	srv, presented := tlsServerRequiringClientCert(t, pki)
	cert, key := pki.issue(t, "client", x509.ExtKeyUsageClientAuth)
	other := newTestPKI(t)
	otherCert, otherKey := other.issue(t, "intruder", x509.ExtKeyUsageClientAuth)

	create := func(events string, c *ClientCert) *Webhook {
		var auth *EndpointAuth
		if c != nil {
			auth = &EndpointAuth{TLSClientCert: c}
		}
		w, err := d.Webhooks().Create(ctx, Webhook{URL: srv.URL, Events: []string{events}, Auth: auth})
		require.NoError(t, err)
		return w
	}
	create("mtls.ok", &ClientCert{Cert: cert, Key: key, CACert: pki.caPEM})
	create("mtls.ok", &ClientCert{Cert: cert, Key: key, CACert: pki.caPEM}) // the same certificate: one client
	create("mtls.intruder", &ClientCert{Cert: otherCert, Key: otherKey, CACert: pki.caPEM})
	create("mtls.none", nil)

	res, err := d.Dispatch(ctx, Event{Type: "mtls.ok", ID: "e1"})
	require.NoError(t, err)
	require.Len(t, res, 2)
	for _, r := range res {
		require.NoError(t, r.Err)
		assert.Equal(t, StatusSuccess, r.Delivery.Status, r.Delivery.LastError)
	}
	assert.EqualValues(t, 2, presented.Load())
	assert.Equal(t, 1, d.dests.http.Auth().CertClients(), "one client per certificate")

	for _, typ := range []string{"mtls.intruder", "mtls.none"} {
		res, err := d.Dispatch(ctx, Event{Type: typ, ID: "e2-" + typ}) // an id names one event
		require.NoError(t, err)
		require.Len(t, res, 1)
		assert.Equal(t, StatusPending, res[0].Delivery.Status, typ)
		assert.NotEmpty(t, res[0].Delivery.LastError, typ)
		assert.NotContains(t, res[0].Delivery.LastError, otherKey)
	}
	assert.EqualValues(t, 2, presented.Load(), "no request got through without the CA's client certificate")
	assert.Equal(t, 2, d.dests.http.Auth().CertClients())
}

// TestTLSClientCertWithHTTPClientRoots: without CACert, the server is verified with the roots of
// Options.HTTPClient's transport; a webhook with no certificate is refused by the server then.
func TestTLSClientCertWithHTTPClientRoots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	pki := newTestPKI(t)
	roots := x509.NewCertPool()
	roots.AddCert(pki.ca)
	d := newTestDispatcher(t, tr, Options{HTTPClient: &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}})
	srv, presented := tlsServerRequiringClientCert(t, pki)
	cert, key := pki.issue(t, "client", x509.ExtKeyUsageClientAuth)
	for typ, auth := range map[string]*EndpointAuth{"with": {TLSClientCert: &ClientCert{Cert: cert, Key: key}}, "without": nil} {
		_, err := d.Webhooks().Create(ctx, Webhook{URL: srv.URL, Events: []string{typ}, Auth: auth})
		require.NoError(t, err)
	}
	res, err := d.Dispatch(ctx, Event{Type: "with", ID: "e1"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, StatusSuccess, res[0].Delivery.Status, res[0].Delivery.LastError)
	res, err = d.Dispatch(ctx, Event{Type: "without", ID: "e2"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, StatusPending, res[0].Delivery.Status)
	assert.Contains(t, res[0].Delivery.LastError, "certificate", "refused in the handshake for want of a client certificate")
	assert.EqualValues(t, 1, presented.Load())
}
