package webhooks

import (
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/admin"
)

// The tenant portal: an admin API for one tenant, opened by a token the service makes for it
// (internal/admin/portal_token.go).

// MaxPortalTokenTTL bounds the life of a portal token.
const MaxPortalTokenTTL = admin.MaxPortalTokenTTL

// PortalToken makes a token that opens Portal for one tenant until ttl from now (at most
// MaxPortalTokenTTL). It needs Options.PortalKey. Hand it to the tenant's browser or client as a bearer
// token; anyone holding it can manage that tenant's webhooks until it expires.
func (d *Dispatcher) PortalToken(tenant string, ttl time.Duration) (string, error) {
	if len(d.opts.PortalKey) == 0 {
		return "", fmt.Errorf("%w: PortalToken needs Options.PortalKey", ErrInvalidOptions)
	}
	if tenant == "" {
		return "", fmt.Errorf("%w: a portal token names a tenant", ErrInvalidWebhook)
	}
	if err := validateTenant(tenant); err != nil {
		return "", err
	}
	if ttl <= 0 || ttl > MaxPortalTokenTTL {
		return "", fmt.Errorf("%w: ttl must be in (0, %s]", ErrInvalidOptions, MaxPortalTokenTTL)
	}
	return admin.PortalToken(d.opts.PortalKey, tenant, d.now().Add(ttl)), nil
}
