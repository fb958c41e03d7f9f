package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// Bounds of the Dispatcher's SendTest: a test send costs a claim, an attempt and a record, so a portal
// user cannot make them without limit.
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
)

// TakeTestSend takes a slot of a webhook's and of its tenant's test-send limiters (Keys.TestSends,
// shared by every replica, slots granted up to TestSendsBurst ahead), or refuses with an error
// wrapping types.ErrTestSendsLimited that says when to try again; an error of Redis's wraps
// types.ErrNotAccepted.
func TakeTestSend(ctx context.Context, client redis.UniversalClient, keys rdb.Keys, webhookID, tenant string) error {
	for _, l := range []struct {
		key   string
		limit int
		what  string
	}{
		{keys.TestSends("webhook:" + webhookID), TestSendsPerWebhook, "webhook " + webhookID},
		{keys.TestSends("tenant:" + tenant), TestSendsPerTenant, "its tenant"},
	} {
		delays, retryIn, err := Take(ctx, client, l.key, l.limit, 1, TestSendsBurst)
		if err != nil {
			return fmt.Errorf("%w: test send: %w", types.ErrNotAccepted, err)
		}
		if len(delays) == 0 {
			return fmt.Errorf("%w: %s takes %d per second; try again in %s", types.ErrTestSendsLimited, l.what, l.limit,
				retryIn.Round(time.Millisecond))
		}
	}
	return nil
}
