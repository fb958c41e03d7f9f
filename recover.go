package webhooks

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/admin"
)

// Bounds of Dispatcher.Recover (internal/admin).
const (
	// DefaultRecoverLimit is how many deliveries Recover re-sends when its limit is 0.
	DefaultRecoverLimit = admin.DefaultRecoverLimit
	// MaxRecoverLimit is the most deliveries one Recover call re-sends; a larger limit is lowered to it.
	MaxRecoverLimit = admin.MaxRecoverLimit
)

// Recover re-sends (Redeliver) a webhook's failed deliveries created in [since, until), at most limit
// per call (0 means DefaultRecoverLimit, more than MaxRecoverLimit means MaxRecoverLimit), and returns
// how many it re-scheduled. A zero since means no lower bound, a zero until means now.
//
// It walks the webhook's retained failed deliveries newest first (DeliveryRepo.Page), so its cost grows
// with the number of failed deliveries the webhook retains, and redelivers those in the window, a few
// at a time; each is attempted once before Recover returns, as Redeliver does, and a failed attempt
// leaves it pending with its retries scheduled. Recover is idempotent: a re-sent delivery is no longer
// failed, so a second call does not send it again, and concurrent calls (or Redeliver calls) send and
// count each delivery once. When more than limit deliveries qualify, call it
// again for the next ones.
//
// An unknown webhook gives an error wrapping ErrNotFound; until not after since, or a negative limit,
// one wrapping ErrInvalidQuery. When some deliveries cannot be redelivered, Recover still re-sends the
// others and returns their count with the errors joined; one whose payload has expired
// (Options.PayloadRetention) is left failed, neither counted nor an error.
func (d *Dispatcher) Recover(ctx context.Context, webhookID string, since, until time.Time, limit int) (int, error) {
	return d.admin.RecoverFailed(ctx, webhookID, since, until, limit)
}
