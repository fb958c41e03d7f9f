package ratelimit

// The bounds of the actions a tenant reaches (issue 43): each one's limiter of a webhook and of its
// tenant, taken together by one script (rdb.TakeBoth), as test sends' are.

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// Bounds of Redeliver, RetryNow and ProbeNow, each on its own limiters: each sends a request to the
// endpoint, or makes a delivery due, at once, so a portal user cannot make them without limit.
const (
	// ActionsPerWebhook is how many resends (or retries, or probes) a webhook takes per second, every
	// replica together, after a burst of ActionsBurst seconds' worth.
	ActionsPerWebhook = 1
	// ActionsPerTenant is how many resends (or retries, or probes) a tenant's webhooks take per second
	// together (the webhooks of no tenant count as one tenant), after a burst of ActionsBurst seconds'
	// worth.
	ActionsPerTenant = 5
	// ActionsBurst is how far ahead an action may draw on its limiters: 10 s, so 11 resends to a
	// webhook at once and 51 to a tenant's, then the rates above.
	ActionsBurst = 10 * time.Second
)

// The actions bounded beside test sends (TestSends).
var (
	// Resends bounds Redeliver (the portal's POST /deliveries/{id}/redeliver).
	Resends = Action{Key: rdb.ActionResends, Noun: "resends", PerWebhook: ActionsPerWebhook, PerTenant: ActionsPerTenant,
		Burst: ActionsBurst, Refused: types.ErrActionsLimited}
	// Retries bounds RetryNow (POST /deliveries/{id}/retry).
	Retries = Action{Key: rdb.ActionRetries, Noun: "retries", PerWebhook: ActionsPerWebhook, PerTenant: ActionsPerTenant,
		Burst: ActionsBurst, Refused: types.ErrActionsLimited}
	// Probes bounds ProbeNow (POST /webhooks/{id}/probe, the UI's "Try now").
	Probes = Action{Key: rdb.ActionProbes, Noun: "tries now", PerWebhook: ActionsPerWebhook, PerTenant: ActionsPerTenant,
		Burst: ActionsBurst, Refused: types.ErrActionsLimited}
)

// Action is a tenant-reachable action bounded per webhook and per tenant.
type Action struct {
	Key        string        // its limiters' keys (rdb.Keys.TenantLimiter)
	Noun       string        // what a refusal calls them, "" when its sentinel names them
	PerWebhook int           // per second, per webhook
	PerTenant  int           // per second, per tenant's webhooks together
	Burst      time.Duration // how far ahead a slot may be granted
	Refused    error         // the sentinel a refusal wraps
}

// Positions in rdb.TakeBoth's reply: how long (µs) until each limiter grants a slot, 0 for one that
// grants now.
const (
	replyWebhookWait = 0
	replyTenantWait  = 1
	takeBothReplyLen = 2
)

// Take takes a slot of a webhook's limiter of a and one of its tenant's together (Keys.WebhookLimiter
// and Keys.TenantLimiter, shared by every replica, slots granted up to a.Burst ahead), in one script
// run (rdb.TakeBoth), or refuses, taking neither: an action one limiter refuses spends no slot of the
// other. A refusal is a *types.Limited wrapping a.Refused that says which limit refused and when the
// action would be granted (of two refusing, the later); an error of Redis's wraps types.ErrNotAccepted.
func (a Action) Take(ctx context.Context, client redis.UniversalClient, keys rdb.Keys, webhookID, tenant string) error {
	reply, err := rdb.TakeBoth.Run(ctx, client,
		[]string{keys.WebhookLimiter(a.Key, tenant, webhookID), keys.TenantLimiter(a.Key, tenant)},
		interval(a.PerWebhook), interval(a.PerTenant), a.Burst.Microseconds()).Int64Slice()
	if err != nil {
		return fmt.Errorf("%w: %s: %w", types.ErrNotAccepted, a.Key, err)
	}
	if len(reply) != takeBothReplyLen {
		return fmt.Errorf("%w: %s: reply of %d values", types.ErrNotAccepted, a.Key, len(reply))
	}
	webhookWait, tenantWait := reply[replyWebhookWait], reply[replyTenantWait]
	what, limit, wait := "webhook "+webhookID, a.PerWebhook, webhookWait
	if tenantWait > webhookWait {
		what, limit, wait = "its tenant", a.PerTenant, tenantWait
	}
	if wait == 0 {
		return nil
	}
	d := (time.Duration(wait) * time.Microsecond).Round(time.Millisecond)
	if a.Noun != "" {
		what = a.Noun + ": " + what
	}
	return &types.Limited{Wait: d, Err: fmt.Errorf("%w: %s takes %d per second; try again in %s", a.Refused, what, limit, d)}
}
