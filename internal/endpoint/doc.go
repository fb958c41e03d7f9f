// Package endpoint is what the library applies to a webhook's endpoint besides its URL string: the URL
// rule and the guarded HTTP client (internal/egress, their errors wrapping the library's sentinels),
// the custom headers (bounds, validation, how they are set on a request), and endpoint authentication
// (validation, the API's view of it, the OAuth2 token store shared by replicas through Redis, and the
// Authenticator that sends an attempt's request authenticated).
package endpoint
