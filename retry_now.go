package webhooks

import "context"

// RetryNow makes a pending delivery due now, for the next worker (of any replica) to attempt, instead
// of at its scheduled retry, and returns it as it stood. A delivery that is not pending, in flight,
// waiting behind an earlier delivery of its order key, or whose webhook's circuit is open is refused
// with an error wrapping ErrNotRetryable; an unknown one with ErrNotFound.
func (d *Dispatcher) RetryNow(ctx context.Context, deliveryID string) (*Delivery, error) {
	return d.admin.Retry(ctx, deliveryID)
}
