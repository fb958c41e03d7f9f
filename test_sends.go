package webhooks

import (
	"time"

	"github.com/smartdrop/webhooks/internal/ratelimit"
)

// Bounds of SendTest (internal/ratelimit): a test send costs a claim, an attempt and a record, so a
// portal user cannot make them without limit.
const (
	// TestSendsPerWebhook is how many test sends a webhook takes per second, every replica together,
	// after a burst of TestSendsBurst seconds' worth.
	TestSendsPerWebhook = ratelimit.TestSendsPerWebhook
	// TestSendsPerTenant is how many test sends a tenant's webhooks take per second together (the
	// webhooks of no tenant count as one tenant), after a burst of TestSendsBurst seconds' worth.
	TestSendsPerTenant = ratelimit.TestSendsPerTenant
	// TestSendsBurst is how far ahead a test send may draw on its limiters: 10 test sends to a webhook
	// at once, 50 to a tenant's, then the rates above.
	TestSendsBurst = ratelimit.TestSendsBurst
	// TestSendRetention is how long a test send's delivery record is kept (Options.Retention when
	// shorter).
	TestSendRetention = time.Hour
)

// Bounds of Redeliver, RetryNow and ProbeNow (internal/ratelimit), each on limiters of its own: each
// sends a request, or makes deliveries due, at once, so a portal user cannot make them without limit.
// A refusal wraps ErrActionsLimited and says when to try again (the admin API: 429 with Retry-After).
const (
	// ActionsPerWebhook is how many resends (or retries, or tries now) a webhook takes per second,
	// every replica together, after a burst of ActionsBurst seconds' worth.
	ActionsPerWebhook = ratelimit.ActionsPerWebhook
	// ActionsPerTenant is how many resends (or retries, or tries now) a tenant's webhooks take per
	// second together (the webhooks of no tenant count as one tenant), after a burst of ActionsBurst
	// seconds' worth.
	ActionsPerTenant = ratelimit.ActionsPerTenant
	// ActionsBurst is how far ahead an action may draw on its limiters: 11 resends to a webhook at
	// once, 51 to a tenant's, then the rates above.
	ActionsBurst = ratelimit.ActionsBurst
)
