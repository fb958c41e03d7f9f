package endpoint

// Endpoint authentication: what a webhook's Auth may hold, how Create checks it, and how the API shows
// it (as set / not set, never its credentials).

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/smartdrop/webhooks/internal/egress"
	"github.com/smartdrop/webhooks/internal/types"
)

// Bounds of Webhook.Auth.
const (
	// MaxAuthValueLen bounds a user name, password, bearer token, client id or secret, or audience, in
	// bytes; and an OAuth2 credentials' scopes together, as the space-separated scope parameter.
	MaxAuthValueLen = 4096
	// MaxOAuth2Scopes bounds the number of an OAuth2 credentials' scopes.
	MaxOAuth2Scopes = 64
	// MaxPEMLen bounds a ClientCert's certificate chain, key and CA together, in bytes.
	MaxPEMLen = 16 << 10
)

// setsAuthorization reports whether a sends the Authorization header.
func setsAuthorization(a *types.EndpointAuth) bool {
	return a != nil && (a.Basic != nil || a.Bearer != "" || a.OAuth2 != nil)
}

// ValidateAuth checks a webhook's Auth: one method, well-formed credentials (a client certificate that
// parses, a token URL that CheckURL accepts under requireHTTPS and p), and no custom Authorization
// header among headers beside a method that sets it. Errors wrap types.ErrInvalidWebhook.
func ValidateAuth(a *types.EndpointAuth, headers map[string]string, requireHTTPS bool, p egress.Policy) error {
	if a == nil {
		return nil
	}
	switch k := types.AuthKinds(a); {
	case a.Type != "" || a.Set:
		return fmt.Errorf("%w: auth: type and set are shown by the API, not set (give the credentials of one method)",
			types.ErrInvalidWebhook)
	case len(k) != 1:
		return fmt.Errorf("%w: auth: exactly one of basic, bearer, oauth2, tls_client_cert, not %d", types.ErrInvalidWebhook, len(k))
	}
	if setsAuthorization(a) {
		for name := range headers {
			if headerAlias(name) == "Authorization" {
				return fmt.Errorf("%w: header %s: the webhook's auth sets Authorization", types.ErrInvalidWebhook, name)
			}
		}
	}
	switch {
	case a.Basic != nil:
		if strings.Contains(a.Basic.User, ":") {
			return fmt.Errorf("%w: auth.basic.user may not contain ':'", types.ErrInvalidWebhook)
		}
		return checkAuthValues(map[string]string{"basic.user": a.Basic.User, "basic.password": a.Basic.Password})
	case a.Bearer != "":
		if strings.ContainsAny(a.Bearer, " \t") {
			return fmt.Errorf("%w: auth.bearer may not contain spaces", types.ErrInvalidWebhook)
		}
		return checkAuthValues(map[string]string{"bearer": a.Bearer})
	case a.OAuth2 != nil:
		return validateOAuth2(a.OAuth2, requireHTTPS, p)
	default:
		return validateClientCert(a.TLSClientCert)
	}
}

func validateOAuth2(o *types.OAuth2ClientCredentials, requireHTTPS bool, p egress.Policy) error {
	if err := CheckURL(o.TokenURL, requireHTTPS, p); err != nil {
		return fmt.Errorf("auth.oauth2.token_url: %w", err)
	}
	if u, _ := url.Parse(o.TokenURL); u != nil && u.User != nil {
		return fmt.Errorf("%w: auth.oauth2.token_url may not carry credentials", types.ErrInvalidWebhook)
	}
	vals := map[string]string{"oauth2.client_id": o.ClientID, "oauth2.client_secret": o.ClientSecret}
	if len(o.Scopes) > MaxOAuth2Scopes {
		return fmt.Errorf("%w: auth.oauth2.scopes: %d scopes, at most %d", types.ErrInvalidWebhook, len(o.Scopes), MaxOAuth2Scopes)
	}
	for _, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \t") {
			return fmt.Errorf("%w: auth.oauth2.scopes: %.40q is not one scope", types.ErrInvalidWebhook, s)
		}
	}
	if len(o.Scopes) > 0 {
		vals["oauth2.scopes"] = strings.Join(o.Scopes, " ") // the scope parameter: bounded as one value
	}
	if o.Audience != "" {
		vals["oauth2.audience"] = o.Audience
	}
	return checkAuthValues(vals)
}

// checkAuthValues checks credentials: each 1 to MaxAuthValueLen bytes of UTF-8 without control
// characters. The error names the field, never the value.
func checkAuthValues(vals map[string]string) error {
	for name, v := range vals {
		if v == "" || len(v) > MaxAuthValueLen || !utf8.ValidString(v) ||
			strings.IndexFunc(v, func(c rune) bool { return c < ' ' || c == 0x7f }) >= 0 {
			return fmt.Errorf("%w: auth.%s must be 1 to %d bytes of text without control characters", types.ErrInvalidWebhook,
				name, MaxAuthValueLen)
		}
	}
	return nil
}

// validateClientCert checks that a client certificate and its key parse as a pair, and its CA.
func validateClientCert(c *types.ClientCert) error {
	if len(c.Cert)+len(c.Key)+len(c.CACert) > MaxPEMLen {
		return fmt.Errorf("%w: auth.tls_client_cert: cert, key and ca_cert of %d bytes together at most", types.ErrInvalidWebhook,
			MaxPEMLen)
	}
	if _, err := tls.X509KeyPair([]byte(c.Cert), []byte(c.Key)); err != nil {
		return fmt.Errorf("%w: auth.tls_client_cert: the certificate and key are not a pair: %w", types.ErrInvalidWebhook, err)
	}
	if c.CACert != "" && !x509.NewCertPool().AppendCertsFromPEM([]byte(c.CACert)) {
		return fmt.Errorf("%w: auth.tls_client_cert.ca_cert holds no PEM certificate", types.ErrInvalidWebhook)
	}
	return nil
}
