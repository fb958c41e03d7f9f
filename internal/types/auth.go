package types

import "strings"

// How attempts authenticate to an endpoint.

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
	if k := AuthKinds(&a); len(k) > 0 {
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
	AuthBasic   = "basic"
	AuthBearer  = "bearer"
	AuthOAuth2  = "oauth2"
	AuthTLSCert = "tls_client_cert"
)

// AuthKinds names the methods of a that are set, in a's order (AuthBasic, AuthBearer, AuthOAuth2,
// AuthTLSCert).
func AuthKinds(a *EndpointAuth) []string {
	var out []string
	if a.Basic != nil {
		out = append(out, AuthBasic)
	}
	if a.Bearer != "" {
		out = append(out, AuthBearer)
	}
	if a.OAuth2 != nil {
		out = append(out, AuthOAuth2)
	}
	if a.TLSClientCert != nil {
		out = append(out, AuthTLSCert)
	}
	return out
}
