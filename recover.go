package webhooks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Bounds of Dispatcher.Recover.
const (
	// DefaultRecoverLimit is how many deliveries Recover re-sends when its limit is 0.
	DefaultRecoverLimit = 100
	// MaxRecoverLimit is the most deliveries one Recover call re-sends; a larger limit is lowered to it.
	MaxRecoverLimit = 1000
	// recoverConcurrency bounds the Redeliver calls one Recover makes at once.
	recoverConcurrency = 8
	// maxRecoverPages bounds the pages of failed deliveries one Recover call reads.
	maxRecoverPages = 1000
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
// others and returns their count with the errors joined.
func (d *Dispatcher) Recover(ctx context.Context, webhookID string, since, until time.Time, limit int) (int, error) {
	limit, until, err := d.recoverArgs(since, until, limit)
	if err != nil {
		return 0, err
	}
	if _, err := d.webhooks.Get(ctx, webhookID); err != nil {
		return 0, err
	}
	picked, err := d.failedInWindow(ctx, webhookID, since, until, limit)
	if err != nil {
		return 0, err
	}
	return d.redeliverEach(ctx, webhookID, picked)
}

// recoverArgs checks Recover's arguments and returns the limit it applies (0 means DefaultRecoverLimit,
// more than MaxRecoverLimit means MaxRecoverLimit) and the end of its window (a zero until means now).
// A negative limit, or until not after since, gives an error wrapping ErrInvalidQuery.
func (d *Dispatcher) recoverArgs(since, until time.Time, limit int) (int, time.Time, error) {
	switch {
	case limit < 0:
		return 0, time.Time{}, fmt.Errorf("%w: negative limit %d", ErrInvalidQuery, limit)
	case limit == 0:
		limit = DefaultRecoverLimit
	default:
		limit = min(limit, MaxRecoverLimit)
	}
	if until.IsZero() {
		until = d.now()
	}
	if !until.After(since) {
		return 0, time.Time{}, fmt.Errorf("%w: until %s is not after since %s", ErrInvalidQuery, until.Format(time.RFC3339Nano), since.Format(time.RFC3339Nano))
	}
	return limit, until, nil
}

// failedInWindow walks the webhook's failed deliveries newest first, at most maxRecoverPages pages, and
// returns up to limit of them created in [since, until), in listing order.
func (d *Dispatcher) failedInWindow(ctx context.Context, webhookID string, since, until time.Time, limit int) ([]*Delivery, error) {
	var picked []*Delivery
	q := DeliveryQuery{Status: StatusFailed, Limit: MaxPageLimit}
	for range maxRecoverPages {
		page, err := d.deliveries.Page(ctx, webhookID, q)
		if err != nil {
			return nil, fmt.Errorf("webhooks: recover %s: %w", webhookID, err)
		}
		for _, dl := range page.Deliveries {
			if !dl.CreatedAt.Before(since) && dl.CreatedAt.Before(until) && len(picked) < limit {
				picked = append(picked, dl)
			}
		}
		if len(picked) == limit || page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	return picked, nil
}

// redeliverEach redelivers the picked deliveries, at most recoverConcurrency at once, and returns how
// many it re-sent with the errors joined; one no longer found is not an error. When ctx ends it starts
// no more of them and adds an error saying it stopped.
func (d *Dispatcher) redeliverEach(ctx context.Context, webhookID string, picked []*Delivery) (int, error) {
	var (
		mu    sync.Mutex
		count int
		errs  []error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, recoverConcurrency)
	)
	for _, before := range picked {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if err := ctx.Err(); err != nil {
			mu.Lock()
			errs = append(errs, fmt.Errorf("webhooks: recover %s: stopped: %w", webhookID, err))
			mu.Unlock()
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			_, resent, err := d.redeliver(ctx, before.ID)
			mu.Lock()
			defer mu.Unlock()
			if resent {
				count++
			}
			// Reset but attempted later (queued behind its order key, or its webhook at its in-flight
			// cap): re-sent all the same.
			if err != nil && !errors.Is(err, ErrNotFound) && !(resent && errors.Is(err, ErrDeferred)) {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return count, errors.Join(errs...)
}
