package endpoint

// The request-authentication step of an attempt: the webhook's Auth applied to its request, on the
// client it needs.

import (
	"context"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/egress"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/sealed"
	"github.com/smartdrop/webhooks/internal/types"
)

// maxCertClients bounds the pool of per-certificate HTTP clients (each with its own connections).
const maxCertClients = 64

// Config is what an Authenticator is made of.
type Config struct {
	// Redis holds the OAuth2 tokens (Keys.Token) and their fetch locks (Keys.TokenLock).
	Redis redis.UniversalClient
	Keys  rdb.Keys
	// Ring seals the tokens at rest.
	Ring *sealed.Ring
	// Client is the guarded client attempts and token fetches use (NewClient).
	Client *http.Client
	// Timeout bounds a token fetch's lock and a replica's wait for another's fetch.
	Timeout time.Duration
	// Now is the clock of the tokens' expiry.
	Now func() time.Time
	// UserAgent is the token requests' User-Agent.
	UserAgent string
}

// Authenticator holds what endpoint authentication keeps between attempts: the per-certificate
// clients and the OAuth2 tokens' store.
type Authenticator struct {
	client *http.Client
	certs  *egress.CertClients
	// Tokens is the OAuth2 tokens' store.
	Tokens *Tokens
}

// NewAuthenticator returns an Authenticator of c.
func NewAuthenticator(c Config) *Authenticator {
	return &Authenticator{client: c.Client, certs: egress.NewCertClients(c.Client, maxCertClients),
		Tokens: &Tokens{redis: c.Redis, keys: c.Keys, ring: c.Ring, client: c.Client, timeout: c.Timeout, now: c.Now,
			userAgent: c.UserAgent}}
}

// Send makes an attempt's request to webhook webhookID, authenticated as auth says: basic or bearer
// sets Authorization (after the custom headers, which may not set it), a client certificate picks the
// client that presents it, OAuth2 sets the shared token and, when the endpoint answers 401, fetches it
// again once and resends the request once with the new one. A nil auth sends no credentials.
func (a *Authenticator) Send(ctx context.Context, req *http.Request, webhookID string, auth *types.EndpointAuth) (*http.Response, error) {
	switch {
	case auth == nil:
	case auth.Basic != nil:
		req.SetBasicAuth(auth.Basic.User, auth.Basic.Password)
	case auth.Bearer != "":
		req.Header["Authorization"] = []string{"Bearer " + auth.Bearer}
	case auth.TLSClientCert != nil:
		c := auth.TLSClientCert
		client, err := a.certs.Get(c.Cert, c.Key, c.CACert)
		if err != nil {
			return nil, err
		}
		return client.Do(req)
	case auth.OAuth2 != nil:
		return a.sendOAuth2(ctx, req, webhookID, auth.OAuth2)
	}
	return a.client.Do(req)
}

// sendOAuth2 sends req with the webhook's OAuth2 token; on a 401, the token is dropped (if no other
// replica replaced it meanwhile), fetched again, and the request sent once more.
func (a *Authenticator) sendOAuth2(ctx context.Context, req *http.Request, webhookID string, o *types.OAuth2ClientCredentials) (*http.Response, error) {
	tok, err := a.Tokens.Get(ctx, webhookID, o)
	if err != nil {
		return nil, err
	}
	req.Header["Authorization"] = []string{"Bearer " + tok.Value}
	resp, err := a.client.Do(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || req.GetBody == nil {
		return resp, err
	}
	_ = resp.Body.Close()
	if err := a.Tokens.Drop(ctx, webhookID, tok); err != nil {
		return nil, err
	}
	if tok, err = a.Tokens.Get(ctx, webhookID, o); err != nil {
		return nil, err
	}
	again := req.Clone(ctx)
	if again.Body, err = req.GetBody(); err != nil {
		return nil, err
	}
	again.Header["Authorization"] = []string{"Bearer " + tok.Value}
	return a.client.Do(again)
}

// CloseIdleConnections closes the idle connections of the per-certificate clients.
func (a *Authenticator) CloseIdleConnections() { a.certs.CloseIdleConnections() }

// CertClients is the number of per-certificate clients held.
func (a *Authenticator) CertClients() int { return a.certs.Len() }
