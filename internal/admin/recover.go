package admin

// Recover: a webhook's failed deliveries of a time window sent again (the Dispatcher's Recover, the
// admin API's POST /webhooks/{id}/recover), each by Redeliver.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/smartdrop/webhooks/internal/index"
	"github.com/smartdrop/webhooks/internal/types"
)

// Bounds of Dispatcher.Recover, documented where the root re-exports them (webhooks.DefaultRecoverLimit,
// webhooks.MaxRecoverLimit).
const (
	DefaultRecoverLimit = 100
	MaxRecoverLimit     = 1000
	// recoverConcurrency bounds the Redeliver calls one Recover makes at once.
	recoverConcurrency = 8
	// maxRecoverPages bounds the pages of failed deliveries one Recover call reads.
	maxRecoverPages = 1000
)

// RecoverFailed is the Dispatcher's Recover: it re-sends (Resend) a webhook's failed deliveries
// created in [since, until), at most limit, and returns how many it re-scheduled.
func (b *Backend) RecoverFailed(ctx context.Context, webhookID string, since, until time.Time, limit int) (int, error) {
	limit, until, err := b.recoverArgs(since, until, limit)
	if err != nil {
		return 0, err
	}
	if _, err := b.WebhookRepo.Get(ctx, webhookID); err != nil {
		return 0, err
	}
	picked, err := b.failedInWindow(ctx, webhookID, since, until, limit)
	if err != nil {
		return 0, err
	}
	return b.redeliverEach(ctx, webhookID, picked)
}

// recoverArgs checks Recover's arguments and returns the limit it applies (0 means DefaultRecoverLimit,
// more than MaxRecoverLimit means MaxRecoverLimit) and the end of its window (a zero until means now).
// A negative limit, or until not after since, gives an error wrapping types.ErrInvalidQuery.
func (b *Backend) recoverArgs(since, until time.Time, limit int) (int, time.Time, error) {
	switch {
	case limit < 0:
		return 0, time.Time{}, fmt.Errorf("%w: negative limit %d", types.ErrInvalidQuery, limit)
	case limit == 0:
		limit = DefaultRecoverLimit
	default:
		limit = min(limit, MaxRecoverLimit)
	}
	if until.IsZero() {
		until = b.Now()
	}
	if !until.After(since) {
		return 0, time.Time{}, fmt.Errorf("%w: until %s is not after since %s", types.ErrInvalidQuery, until.Format(time.RFC3339Nano), since.Format(time.RFC3339Nano))
	}
	return limit, until, nil
}

// failedInWindow walks the webhook's failed deliveries newest first, at most maxRecoverPages pages, and
// returns up to limit of them created in [since, until), in listing order.
func (b *Backend) failedInWindow(ctx context.Context, webhookID string, since, until time.Time, limit int) ([]*types.Delivery, error) {
	var picked []*types.Delivery
	q := types.DeliveryQuery{Status: types.StatusFailed, Limit: index.MaxPageLimit}
	for range maxRecoverPages {
		page, err := b.DeliveryRepo.Page(ctx, webhookID, q)
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
// many it re-sent with the errors joined; one no longer found, or whose payload has expired
// (types.ErrPayloadExpired: it cannot be sent again), is not an error. When ctx ends it starts
// no more of them and adds an error saying it stopped.
func (b *Backend) redeliverEach(ctx context.Context, webhookID string, picked []*types.Delivery) (int, error) {
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
			_, resent, err := b.Resend(ctx, before.ID)
			mu.Lock()
			defer mu.Unlock()
			if resent {
				count++
			}
			// Reset but attempted later (queued behind its order key, or its webhook at its in-flight
			// cap): re-sent all the same.
			if err != nil && !errors.Is(err, types.ErrNotFound) && !errors.Is(err, types.ErrPayloadExpired) && !(resent && errors.Is(err, types.ErrDeferred)) {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return count, errors.Join(errs...)
}
