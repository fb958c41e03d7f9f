package webhooks

// The public types, defined in internal/types so that every internal package shares them; the root
// re-exports them here, so callers import one package.

import "github.com/smartdrop/webhooks/internal/types"

type (
	// Event is one domain event (internal/types).
	Event = types.Event
	// Webhook is a subscriber (internal/types).
	Webhook = types.Webhook
	// EndpointAuth is how attempts authenticate to an endpoint (internal/types).
	EndpointAuth = types.EndpointAuth
	// BasicAuth is HTTP basic authentication (internal/types).
	BasicAuth = types.BasicAuth
	// OAuth2ClientCredentials is the OAuth 2.0 client-credentials grant (internal/types).
	OAuth2ClientCredentials = types.OAuth2ClientCredentials
	// ClientCert is a TLS client certificate (internal/types).
	ClientCert = types.ClientCert
	// Delivery is one (webhook, event) pair's delivery (internal/types).
	Delivery = types.Delivery
	// Attempt is one HTTP attempt of a delivery (internal/types).
	Attempt = types.Attempt
	// Status is the state of a delivery (internal/types).
	Status = types.Status
	// Result is the outcome of dispatching an event to one webhook (internal/types).
	Result = types.Result
	// Health is a webhook's circuit breaker (internal/types).
	Health = types.Health
	// CircuitState is the state of a circuit breaker (internal/types).
	CircuitState = types.CircuitState
	// EventType is an entry of the catalog of event types (internal/types).
	EventType = types.EventType
	// HourStats counts the attempts of one hour by outcome (internal/types).
	HourStats = types.HourStats
)

// The states of a delivery and of a circuit (internal/types).
const (
	StatusPending  = types.StatusPending
	StatusSuccess  = types.StatusSuccess
	StatusFailed   = types.StatusFailed
	StatusSkipped  = types.StatusSkipped
	CircuitClosed  = types.CircuitClosed
	CircuitOpen    = types.CircuitOpen
	CircuitProbing = types.CircuitProbing
	// CircuitDisabled is the admin API's circuit state of a disabled webhook (types.CircuitDisabled).
	CircuitDisabled = types.CircuitDisabled
)

// The sentinel errors: calls wrap them with %w and context; test with errors.Is. Each is documented
// in internal/types.
var (
	ErrTestSendsLimited = types.ErrTestSendsLimited
	ErrActionsLimited   = types.ErrActionsLimited
	ErrNotRetryable     = types.ErrNotRetryable
	ErrProbeRefused     = types.ErrProbeRefused
	ErrInvalidQuery     = types.ErrInvalidQuery
	ErrInvalidCursor    = types.ErrInvalidCursor
	ErrCorruptRecord    = types.ErrCorruptRecord
	ErrDeferred         = types.ErrDeferred
	ErrLeaseLost        = types.ErrLeaseLost
	ErrBlockedAddress   = types.ErrBlockedAddress
	ErrReplayIndexOff   = types.ErrReplayIndexOff
	ErrSecretKey        = types.ErrSecretKey
	ErrInvalidOptions   = types.ErrInvalidOptions
	ErrInvalidEvent     = types.ErrInvalidEvent
	ErrEventConflict    = types.ErrEventConflict
	ErrInvalidWebhook   = types.ErrInvalidWebhook
	ErrInvalidEventType = types.ErrInvalidEventType
	ErrEventTypeExists  = types.ErrEventTypeExists
	ErrOrderKeyConflict = types.ErrOrderKeyConflict
	ErrNotFound         = types.ErrNotFound
	ErrInvalidSignature = types.ErrInvalidSignature
	ErrInvalidTimestamp = types.ErrInvalidTimestamp
	ErrMissingHeaders   = types.ErrMissingHeaders
	ErrWebhookDisabled  = types.ErrWebhookDisabled
	ErrConflict         = types.ErrConflict
	ErrNotAccepted      = types.ErrNotAccepted
	ErrInvalidToken     = types.ErrInvalidToken
	ErrTenantQuota      = types.ErrTenantQuota
	ErrPayloadExpired   = types.ErrPayloadExpired
)
