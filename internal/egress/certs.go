package egress

// Clients that present a TLS client certificate, pooled per certificate, on a guarded client's
// transport.

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"sync"
)

// CertClients is a bounded pool of HTTP clients, one per client certificate (and CA), each a copy of a
// base client (from Policy.Client) whose transport is cloned, so it keeps the guarded dialer, with the
// certificate added to its TLS configuration. Each keeps its own connections: a connection made with
// one certificate is never reused with another. Safe for concurrent use.
type CertClients struct {
	base *http.Client
	max  int

	mu    sync.Mutex
	byKey map[[32]byte]*http.Client
	order [][32]byte // insertion order, for eviction
}

// NewCertClients returns a pool of at most max clients made from base.
func NewCertClients(base *http.Client, max int) *CertClients {
	return &CertClients{base: base, max: max, byKey: map[[32]byte]*http.Client{}}
}

// Get returns the client that presents the PEM certificate (chain) and key, trusting caPEM's
// certificates for the server when caPEM is not empty (else the base transport's roots). The oldest
// client is dropped (its idle connections closed) when the pool is full.
func (c *CertClients) Get(certPEM, keyPEM, caPEM string) (*http.Client, error) {
	k := sha256.Sum256([]byte(certPEM + "\x00" + keyPEM + "\x00" + caPEM))
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.byKey[k]; ok {
		return cl, nil
	}
	cl, err := c.build(certPEM, keyPEM, caPEM)
	if err != nil {
		return nil, err
	}
	if len(c.order) >= c.max {
		old := c.order[0]
		c.order = c.order[1:]
		c.byKey[old].CloseIdleConnections()
		delete(c.byKey, old)
	}
	c.byKey[k], c.order = cl, append(c.order, k)
	return cl, nil
}

// Len is the number of pooled clients.
func (c *CertClients) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}

// CloseIdleConnections closes the idle connections of every pooled client.
func (c *CertClients) CloseIdleConnections() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.byKey {
		cl.CloseIdleConnections()
	}
}

func (c *CertClients) build(certPEM, keyPEM, caPEM string) (*http.Client, error) {
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		return nil, errors.New("client certificate and key are not a pair")
	}
	base, ok := c.base.Transport.(*http.Transport)
	if !ok || base == nil {
		return nil, errors.New("a client certificate needs Options.HTTPClient's Transport to be an *http.Transport")
	}
	tr := base.Clone() // keeps the guarded DialContext
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if base.TLSClientConfig != nil {
		cfg = base.TLSClientConfig.Clone()
	}
	cfg.Certificates = []tls.Certificate{pair}
	if caPEM != "" {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM([]byte(caPEM)) {
			return nil, errors.New("CA certificate holds no PEM certificate")
		}
		cfg.RootCAs = roots
	}
	tr.TLSClientConfig = cfg
	cl := *c.base
	cl.Transport = tr
	return &cl, nil
}
