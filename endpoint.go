package webhooks

// The bounds of a webhook's custom headers and endpoint authentication (internal/endpoint, which
// checks and applies them).

import "github.com/smartdrop/webhooks/internal/endpoint"

// Bounds of Webhook.Headers.
const (
	// MaxHeaders is the most custom headers a webhook may have.
	MaxHeaders = endpoint.MaxHeaders
	// MaxHeaderNameLen bounds a custom header's name, in bytes.
	MaxHeaderNameLen = endpoint.MaxHeaderNameLen
	// MaxHeaderValueLen bounds a custom header's value, in bytes.
	MaxHeaderValueLen = endpoint.MaxHeaderValueLen
)

// ReservedHeaders are the header names (canonical form) a webhook's custom Headers may not set: the
// Standard Webhooks headers and the others the library sends (Content-Type, User-Agent, the W3C trace
// context), and those that describe the message or the connection rather than the event (Host,
// Content-Length, Transfer-Encoding and the hop-by-hop headers). Authorization is allowed: receivers
// often check a token of their own.
var ReservedHeaders = endpoint.ReservedHeaders

// Bounds of Webhook.Auth.
const (
	// MaxAuthValueLen bounds a user name, password, bearer token, client id or secret, or audience, in
	// bytes; and an OAuth2 credentials' scopes together, as the space-separated scope parameter.
	MaxAuthValueLen = endpoint.MaxAuthValueLen
	// MaxOAuth2Scopes bounds the number of an OAuth2 credentials' scopes.
	MaxOAuth2Scopes = endpoint.MaxOAuth2Scopes
	// MaxPEMLen bounds a ClientCert's certificate chain, key and CA together, in bytes.
	MaxPEMLen = endpoint.MaxPEMLen
)
