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

// Positions in rdb.TakeTestSend's reply: how long (µs) until each limiter grants a slot, 0 for one that
// grants now.
const (
	replyWebhookWait = 0
	replyTenantWait  = 1
	testSendReplyLen = 2
)

// TakeTestSend takes a slot of a webhook's test-send limiter and one of its tenant's together
// (Keys.WebhookTestSends and Keys.TenantTestSends, shared by every replica, slots granted up to
// TestSendsBurst ahead), in one script run (rdb.TakeTestSend), or refuses, taking neither: a test send
// one limiter refuses spends no slot of the other. A refusal wraps types.ErrTestSendsLimited and says
// which limit refused and when a test send would be granted (of two refusing, the later); an error of
// Redis's wraps types.ErrNotAccepted.
func TakeTestSend(ctx context.Context, client redis.UniversalClient, keys rdb.Keys, webhookID, tenant string) error {
	reply, err := rdb.TakeTestSend.Run(ctx, client,
		[]string{keys.WebhookTestSends(tenant, webhookID), keys.TenantTestSends(tenant)},
		interval(TestSendsPerWebhook), interval(TestSendsPerTenant), TestSendsBurst.Microseconds()).Int64Slice()
	if err != nil {
		return fmt.Errorf("%w: test send: %w", types.ErrNotAccepted, err)
	}
	if len(reply) != testSendReplyLen {
		return fmt.Errorf("%w: test send: reply of %d values", types.ErrNotAccepted, len(reply))
	}
	webhookWait, tenantWait := reply[replyWebhookWait], reply[replyTenantWait]
	what, limit, wait := "webhook "+webhookID, TestSendsPerWebhook, webhookWait
	if tenantWait > webhookWait {
		what, limit, wait = "its tenant", TestSendsPerTenant, tenantWait
	}
	if wait == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s takes %d per second; try again in %s", types.ErrTestSendsLimited, what, limit,
		(time.Duration(wait) * time.Microsecond).Round(time.Millisecond))
}
