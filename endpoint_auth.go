package webhooks

// Endpoint authentication: what a webhook's Auth may hold, how Create checks it, and how the API shows
// it (as set / not set, never its credentials).

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// Bounds of Webhook.Auth.
const (
	// MaxAuthValueLen bounds a user name, password, bearer token, client id or secret, scope or
	// audience, in bytes.
	MaxAuthValueLen = 4096
	// MaxPEMLen bounds a ClientCert's certificate chain, key and CA together, in bytes.
	MaxPEMLen = 16 << 10
)

// EndpointAuth is how attempts authenticate to a webhook's endpoint: exactly one of its methods (a
// webhook with Auth nil sends no credentials). Basic, Bearer and OAuth2 set the Authorization header,
// which no custom header may then set; TLSClientCert presents a client certificate. The credentials are
// sealed at rest when Options.SecretKeys is set, never logged, and never returned by the admin API or
// the portal, which show only Type and Set.
type EndpointAuth struct {
	// Basic is HTTP basic authentication (RFC 7617).
	Basic *BasicAuth `json:"basic,omitempty"`
	// Bearer is a static bearer token, sent as "Authorization: Bearer <token>".
	Bearer string `json:"bearer,omitempty"`
	// OAuth2 fetches a bearer token by the client-credentials grant and shares it between replicas.
	OAuth2 *OAuth2ClientCredentials `json:"oauth2,omitempty"`
	// TLSClientCert is a client certificate presented in the TLS handshake (mTLS).
	TLSClientCert *ClientCert `json:"tls_client_cert,omitempty"`

	// Type ("basic", "bearer", "oauth2" or "tls_client_cert") and Set are how the admin API and the
	// portal show Auth, without its credentials. They are never stored (and ignored beside
	// credentials); in a PATCH, an auth of only these two (the API's own view sent back) keeps the
	// webhook's credentials, and alone in a create they are refused.
	Type string `json:"type,omitempty"`
	Set  bool   `json:"set,omitempty"`
}

// BasicAuth is a user name and password for HTTP basic authentication. User may not contain ':'.
type BasicAuth struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

// OAuth2ClientCredentials is the OAuth 2.0 client-credentials grant (RFC 6749 §4.4): attempts send the
// token it yields as a bearer token. The token is fetched through the egress guard (TokenURL obeys
// the same rules as the webhook URL), cached in Redis for every replica until shortly before it
// expires, fetched by one replica at a time, and fetched again once when the endpoint answers 401.
type OAuth2ClientCredentials struct {
	TokenURL     string `json:"token_url"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	// Scopes are sent as the space-separated "scope" parameter, when any.
	Scopes []string `json:"scopes,omitempty"`
	// Audience is sent as the "audience" parameter (Auth0, Okta and others), when set.
	Audience string `json:"audience,omitempty"`
}

// ClientCert is a TLS client certificate: a PEM certificate (chain) and its PEM private key. CACert,
// when set, is the PEM certificate(s) of the authority that signed the endpoint's server certificate,
// which attempts to this webhook then trust instead of the system roots (or of the RootCAs of
// Options.HTTPClient's transport, used otherwise). Create checks that the pair parses.
type ClientCert struct {
	Cert   string `json:"cert"`
	Key    string `json:"key"`
	CACert string `json:"ca_cert,omitempty"`
}

// String names a's method, never its credentials (so %v, %+v and %#v of it do not print them).
func (a EndpointAuth) String() string {
	if k := a.kinds(); len(k) > 0 {
		return "EndpointAuth{" + strings.Join(k, ",") + "}"
	}
	return "EndpointAuth{}"
}

// GoString is String.
func (a EndpointAuth) GoString() string { return a.String() }

// String shows the user, not the password.
func (b BasicAuth) String() string { return "BasicAuth{User:" + b.User + "}" }

// GoString is String.
func (b BasicAuth) GoString() string { return b.String() }

// String shows the token URL and client id, not the secret.
func (o OAuth2ClientCredentials) String() string {
	return "OAuth2ClientCredentials{TokenURL:" + o.TokenURL + " ClientID:" + o.ClientID + "}"
}

// GoString is String.
func (o OAuth2ClientCredentials) GoString() string { return o.String() }

// String does not show the key.
func (c ClientCert) String() string { return "ClientCert{}" }

// GoString is String.
func (c ClientCert) GoString() string { return c.String() }

// The methods of EndpointAuth, as its Type names them.
const (
	authBasic   = "basic"
	authBearer  = "bearer"
	authOAuth2  = "oauth2"
	authTLSCert = "tls_client_cert"
)

// kind names the methods a are set, in a's order.
func (a *EndpointAuth) kinds() []string {
	var out []string
	if a.Basic != nil {
		out = append(out, authBasic)
	}
	if a.Bearer != "" {
		out = append(out, authBearer)
	}
	if a.OAuth2 != nil {
		out = append(out, authOAuth2)
	}
	if a.TLSClientCert != nil {
		out = append(out, authTLSCert)
	}
	return out
}

// setsAuthorization reports whether a sends the Authorization header.
func (a *EndpointAuth) setsAuthorization() bool {
	return a != nil && (a.Basic != nil || a.Bearer != "" || a.OAuth2 != nil)
}

// isView reports whether a is only the API's view (Type and Set, no credentials).
func (a *EndpointAuth) isView() bool {
	return a != nil && len(a.kinds()) == 0 && (a.Type != "" || a.Set)
}

// view is a as the API shows it: its Type, and Set.
func (a *EndpointAuth) view() *EndpointAuth {
	if a == nil {
		return nil
	}
	k := a.kinds()
	if len(k) == 0 {
		return nil
	}
	return &EndpointAuth{Type: k[0], Set: true}
}

// clone is a deep copy of a.
func (a *EndpointAuth) clone() *EndpointAuth {
	if a == nil {
		return nil
	}
	c := *a
	if a.Basic != nil {
		b := *a.Basic
		c.Basic = &b
	}
	if a.OAuth2 != nil {
		o := *a.OAuth2
		o.Scopes = slices.Clone(a.OAuth2.Scopes)
		c.OAuth2 = &o
	}
	if a.TLSClientCert != nil {
		t := *a.TLSClientCert
		c.TLSClientCert = &t
	}
	return &c
}

// validateAuth checks a webhook's Auth: one method, well-formed credentials (a client certificate that
// parses, a token URL the egress guard accepts), and no custom Authorization header beside a method
// that sets it.
func (r *WebhookRepo) validateAuth(a *EndpointAuth, headers map[string]string) error {
	if a == nil {
		return nil
	}
	switch k := a.kinds(); {
	case a.Type != "" || a.Set:
		return fmt.Errorf("%w: auth: type and set are shown by the API, not set (give the credentials of one method)",
			ErrInvalidWebhook)
	case len(k) != 1:
		return fmt.Errorf("%w: auth: exactly one of basic, bearer, oauth2, tls_client_cert, not %d", ErrInvalidWebhook, len(k))
	}
	if a.setsAuthorization() {
		for name := range headers {
			if headerAlias(name) == "Authorization" {
				return fmt.Errorf("%w: header %s: the webhook's auth sets Authorization", ErrInvalidWebhook, name)
			}
		}
	}
	switch {
	case a.Basic != nil:
		if strings.Contains(a.Basic.User, ":") {
			return fmt.Errorf("%w: auth.basic.user may not contain ':'", ErrInvalidWebhook)
		}
		return checkAuthValues(map[string]string{"basic.user": a.Basic.User, "basic.password": a.Basic.Password})
	case a.Bearer != "":
		if strings.ContainsAny(a.Bearer, " \t") {
			return fmt.Errorf("%w: auth.bearer may not contain spaces", ErrInvalidWebhook)
		}
		return checkAuthValues(map[string]string{"bearer": a.Bearer})
	case a.OAuth2 != nil:
		return r.validateOAuth2(a.OAuth2)
	default:
		return validateClientCert(a.TLSClientCert)
	}
}

func (r *WebhookRepo) validateOAuth2(o *OAuth2ClientCredentials) error {
	if err := validateWebhookURL(o.TokenURL, r.https, r.policy); err != nil {
		return fmt.Errorf("auth.oauth2.token_url: %w", err)
	}
	if u, _ := url.Parse(o.TokenURL); u != nil && u.User != nil {
		return fmt.Errorf("%w: auth.oauth2.token_url may not carry credentials", ErrInvalidWebhook)
	}
	vals := map[string]string{"oauth2.client_id": o.ClientID, "oauth2.client_secret": o.ClientSecret}
	for _, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \t") {
			return fmt.Errorf("%w: auth.oauth2.scopes: %q is not one scope", ErrInvalidWebhook, s)
		}
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
			return fmt.Errorf("%w: auth.%s must be 1 to %d bytes of text without control characters", ErrInvalidWebhook,
				name, MaxAuthValueLen)
		}
	}
	return nil
}

// validateClientCert checks that a client certificate and its key parse as a pair, and its CA.
func validateClientCert(c *ClientCert) error {
	if len(c.Cert)+len(c.Key)+len(c.CACert) > MaxPEMLen {
		return fmt.Errorf("%w: auth.tls_client_cert: cert, key and ca_cert of %d bytes together at most", ErrInvalidWebhook,
			MaxPEMLen)
	}
	if _, err := tls.X509KeyPair([]byte(c.Cert), []byte(c.Key)); err != nil {
		return fmt.Errorf("%w: auth.tls_client_cert: the certificate and key are not a pair: %w", ErrInvalidWebhook, err)
	}
	if c.CACert != "" && !x509.NewCertPool().AppendCertsFromPEM([]byte(c.CACert)) {
		return fmt.Errorf("%w: auth.tls_client_cert.ca_cert holds no PEM certificate", ErrInvalidWebhook)
	}
	return nil
}
