package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/ratelimit"
)

// Bounds of SendTest: a test send costs a claim, an attempt and a record, so a portal user cannot make
// them without limit.
const (
	// TestSendsPerWebhook is how many test sends a webhook takes per second, every replica together,
	// after a burst of TestSendsBurst seconds' worth.
	TestSendsPerWebhook = 1
	// TestSendsPerTenant is how many test sends a tenant's webhooks take per second together (the
	// webhooks of no tenant count as one tenant), after a burst of TestSendsBurst seconds' worth.
	TestSendsPerTenant = 5
	// TestSendsBurst is how far ahead a test send may draw on its limiters: 10 test sends to a webhook
	// at once, 50 to a tenant's, then the rates above.
	TestSendsBurst = 10 * time.Second
	// TestSendRetention is how long a test send's delivery record is kept (Options.Retention when
	// shorter).
	TestSendRetention = time.Hour
)

// takeTestSend takes a slot of the webhook's and of its tenant's test-send limiters (GCRA on Redis's
// clock, shared by every replica, slots granted up to TestSendsBurst ahead), or refuses with an error
// wrapping ErrTestSendsLimited that says when to try again.
func (d *Dispatcher) takeTestSend(ctx context.Context, s *storedWebhook) error {
	for _, l := range []struct {
		key   string
		limit int
		what  string
	}{
		{d.keys.TestSends("webhook:" + s.ID), TestSendsPerWebhook, "webhook " + s.ID},
		{d.keys.TestSends("tenant:" + s.Tenant), TestSendsPerTenant, "its tenant"},
	} {
		delays, retryIn, err := ratelimit.Take(ctx, d.rdb, l.key, l.limit, 1, TestSendsBurst)
		if err != nil {
			return fmt.Errorf("%w: test send: %w", ErrNotAccepted, err)
		}
		if len(delays) == 0 {
			return fmt.Errorf("%w: %s takes %d per second; try again in %s", ErrTestSendsLimited, l.what, l.limit,
				retryIn.Round(time.Millisecond))
		}
	}
	return nil
}
