package ratelimit

import (
	"context"
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

// TestSends is SendTest's Action.
var TestSends = Action{Key: rdb.ActionTests, PerWebhook: TestSendsPerWebhook, PerTenant: TestSendsPerTenant,
	Burst: TestSendsBurst, Refused: types.ErrTestSendsLimited}

// TakeTestSend takes a slot of a webhook's test-send limiter and one of its tenant's together
// (Keys.WebhookTestSends and Keys.TenantTestSends): TestSends.Take.
func TakeTestSend(ctx context.Context, client redis.UniversalClient, keys rdb.Keys, webhookID, tenant string) error {
	return TestSends.Take(ctx, client, keys, webhookID, tenant)
}
