package webhooks

// The request-authentication step of an attempt: the webhook's Auth applied to its request, on the
// client it needs.

import (
	"context"
	"net/http"

	"github.com/smartdrop/webhooks/internal/egress"
	"github.com/smartdrop/webhooks/internal/sealed"
)

// maxCertClients bounds the pool of per-certificate HTTP clients (each with its own connections).
const maxCertClients = 64

// authenticator holds what endpoint authentication keeps between attempts: the per-certificate
// clients and the OAuth2 tokens' store.
type authenticator struct {
	certs  *egress.CertClients
	tokens *tokenStore
}

func newAuthenticator(d *Dispatcher, ring *sealed.Ring) *authenticator {
	return &authenticator{certs: egress.NewCertClients(d.client, maxCertClients), tokens: &tokenStore{d: d, ring: ring}}
}

// send makes an attempt's request, authenticated as its webhook's Auth says: basic or bearer sets
// Authorization (after the custom headers, which may not set it), a client certificate picks the
// client that presents it, OAuth2 sets the shared token and, when the endpoint answers 401, fetches it
// again once and resends the request once with the new one.
func (d *Dispatcher) send(ctx context.Context, req *http.Request, wh *storedWebhook) (*http.Response, error) {
	a := wh.Auth
	switch {
	case a == nil:
	case a.Basic != nil:
		req.SetBasicAuth(a.Basic.User, a.Basic.Password)
	case a.Bearer != "":
		req.Header["Authorization"] = []string{"Bearer " + a.Bearer}
	case a.TLSClientCert != nil:
		c := a.TLSClientCert
		client, err := d.auth.certs.Get(c.Cert, c.Key, c.CACert)
		if err != nil {
			return nil, err
		}
		return client.Do(req)
	case a.OAuth2 != nil:
		return d.sendOAuth2(ctx, req, wh)
	}
	return d.client.Do(req)
}

// sendOAuth2 sends req with the webhook's OAuth2 token; on a 401, the token is dropped (if no other
// replica replaced it meanwhile), fetched again, and the request sent once more.
func (d *Dispatcher) sendOAuth2(ctx context.Context, req *http.Request, wh *storedWebhook) (*http.Response, error) {
	tok, err := d.auth.tokens.get(ctx, wh)
	if err != nil {
		return nil, err
	}
	req.Header["Authorization"] = []string{"Bearer " + tok.token}
	resp, err := d.client.Do(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || req.GetBody == nil {
		return resp, err
	}
	_ = resp.Body.Close()
	if err := d.auth.tokens.drop(ctx, wh, tok); err != nil {
		return nil, err
	}
	if tok, err = d.auth.tokens.get(ctx, wh); err != nil {
		return nil, err
	}
	again := req.Clone(ctx)
	if again.Body, err = req.GetBody(); err != nil {
		return nil, err
	}
	again.Header["Authorization"] = []string{"Bearer " + tok.token}
	return d.client.Do(again)
}
