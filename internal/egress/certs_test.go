package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// selfSigned is a PEM certificate and key of the test's own.
func selfSigned(t *testing.T, name string) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}))
}

// TestCertClientsKeepTheGuard: a client made for a certificate dials through the guarded dialer of
// the base client, so loopback stays blocked.
func TestCertClientsKeepTheGuard(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	base, err := Policy{}.Client(nil, time.Second)
	require.NoError(t, err)
	cert, key := selfSigned(t, "c")
	c, err := NewCertClients(base, 4).Get(cert, key, "")
	require.NoError(t, err)
	_, err = c.Get(srv.URL)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrBlocked), "%v", err)
	assert.Equal(t, http.ErrUseLastResponse, c.CheckRedirect(nil, nil), "redirects still not followed")
}

// TestCertClientsBounded: one client per certificate, at most max of them.
func TestCertClientsBounded(t *testing.T) {
	t.Parallel()
	base, err := Policy{AllowPrivate: true}.Client(nil, time.Second)
	require.NoError(t, err)
	pool := NewCertClients(base, 2)
	var pems [3][2]string
	for i := range pems {
		pems[i][0], pems[i][1] = selfSigned(t, "c")
	}
	a1, err := pool.Get(pems[0][0], pems[0][1], "")
	require.NoError(t, err)
	a2, err := pool.Get(pems[0][0], pems[0][1], "")
	require.NoError(t, err)
	assert.Same(t, a1, a2)
	assert.NotSame(t, base.Transport, a1.Transport, "its own transport, so connections are never shared between certificates")
	for _, p := range pems[1:] {
		_, err := pool.Get(p[0], p[1], "")
		require.NoError(t, err)
	}
	assert.Equal(t, 2, pool.Len())
	_, err = pool.Get(pems[0][0], pems[1][1], "")
	assert.Error(t, err, "a certificate with another's key")
	_, err = pool.Get(pems[0][0], pems[0][1], "not a CA")
	assert.Error(t, err)
}
