package webhooks

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// testPKI is a CA of the test's own, with a server certificate for 127.0.0.1 and a client
// certificate, all in PEM.
type testPKI struct {
	ca                    *x509.Certificate
	caKey                 *ecdsa.PrivateKey
	caPEM                 string
	serverCert, serverKey string
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	p := &testPKI{ca: ca, caKey: key, caPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
	p.serverCert, p.serverKey = p.issue(t, "server", x509.ExtKeyUsageServerAuth)
	return p
}

// issue makes a certificate signed by the CA, returning its PEM certificate and PEM key.
func (p *testPKI) issue(t testing.TB, name string, usage x509.ExtKeyUsage) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	require.NoError(t, err)
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}))
}

// tokenServer is an OAuth2 token endpoint of the test's own: it checks the client's credentials,
// counts the tokens it issues, and knows which are valid.
type tokenServer struct {
	srv       *httptest.Server
	issued    atomic.Int32
	expiresIn int
	delay     time.Duration // before answering, so that concurrent fetches overlap
	before    atomic.Pointer[func()]
	mu        sync.Mutex
	valid     map[string]bool
	forms     []string // scope and audience of each request
}

func newTokenServer(t testing.TB, clientID, secret string, expiresIn int) *tokenServer {
	ts := &tokenServer{expiresIn: expiresIn, valid: map[string]bool{}, delay: 50 * time.Millisecond}
	ts.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || user != clientID || pass != secret || r.FormValue("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		if f := ts.before.Load(); f != nil {
			(*f)()
		}
		time.Sleep(ts.delay)
		tok := fmt.Sprintf("tok-%d-%s", ts.issued.Add(1), randomHex(8))
		ts.mu.Lock()
		ts.valid[tok] = true
		ts.forms = append(ts.forms, r.FormValue("scope")+"|"+r.FormValue("audience"))
		ts.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": ts.expiresIn})
	}))
	t.Cleanup(ts.srv.Close)
	return ts
}

// setBefore runs f before each token is issued.
func (ts *tokenServer) setBefore(f func()) { ts.before.Store(&f) }

// revokeAll makes every token issued so far invalid.
func (ts *tokenServer) revokeAll() {
	ts.mu.Lock()
	clear(ts.valid)
	ts.mu.Unlock()
}

// endpoint is a webhook endpoint that accepts only the token server's valid tokens (else 401), and
// counts what it accepted.
func (ts *tokenServer) endpoint(t testing.TB) (*httptest.Server, *atomic.Int32) {
	var accepted atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		ts.mu.Lock()
		ok = ok && ts.valid[tok]
		ts.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		accepted.Add(1)
	}))
	t.Cleanup(srv.Close)
	return srv, &accepted
}

// rawKeyspace reads every key under the prefix on every master and returns each one's whole value as
// bytes (strings, hash fields and values, set and zset members, stream fields), by key.
func rawKeyspace(t testing.TB, rdb redis.UniversalClient, prefix string) map[string][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var mu sync.Mutex
	out := map[string][]byte{}
	node := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, "*"+prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			v, err := rawValue(ctx, c, k)
			if err != nil {
				return err
			}
			mu.Lock()
			out[k] = v
			mu.Unlock()
		}
		return iter.Err()
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		require.NoError(t, c.ForEachMaster(ctx, node))
	case *redis.Client:
		require.NoError(t, node(ctx, c))
	default:
		t.Fatalf("unexpected client %T", rdb)
	}
	return out
}

func rawValue(ctx context.Context, c *redis.Client, k string) ([]byte, error) {
	typ, err := c.Type(ctx, k).Result()
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	switch typ {
	case "string":
		v, err := c.Get(ctx, k).Result()
		if err != nil && err != redis.Nil {
			return nil, err
		}
		b.WriteString(v)
	case "hash":
		m, err := c.HGetAll(ctx, k).Result()
		if err != nil {
			return nil, err
		}
		for f, v := range m {
			b.WriteString(f + "\x00" + v + "\x00")
		}
	case "zset":
		m, err := c.ZRange(ctx, k, 0, -1).Result()
		if err != nil {
			return nil, err
		}
		b.WriteString(strings.Join(m, "\x00"))
	case "set":
		m, err := c.SMembers(ctx, k).Result()
		if err != nil {
			return nil, err
		}
		b.WriteString(strings.Join(m, "\x00"))
	case "stream":
		m, err := c.XRange(ctx, k, "-", "+").Result()
		if err != nil {
			return nil, err
		}
		for _, e := range m {
			for f, v := range e.Values {
				fmt.Fprintf(&b, "%s\x00%v\x00", f, v)
			}
		}
	case "none":
	default:
		return nil, fmt.Errorf("key %s of unexpected type %s", k, typ)
	}
	return []byte(b.String()), nil
}

// secretKey is a 32-byte key of the test's own.
func secretKey(b byte) []byte { return []byte(strings.Repeat(string(rune('a'+b%26)), 32)) }

// tlsServerRequiringClientCert is an HTTPS endpoint of the PKI's server certificate that requires a
// client certificate signed by the PKI's CA, and counts the requests that presented one.
func tlsServerRequiringClientCert(t testing.TB, p *testPKI) (*httptest.Server, *atomic.Int32) {
	var seen atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			seen.Add(1)
		}
	}))
	pair, err := tls.X509KeyPair([]byte(p.serverCert), []byte(p.serverKey))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
		MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &seen
}
