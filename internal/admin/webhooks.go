package admin

// The webhook routes (Handler lists every route): the registry within a request's scope.

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// CreateWebhook registers a webhook (POST /webhooks).
func (b *Backend) CreateWebhook(ctx context.Context, w types.Webhook) (*types.Webhook, error) {
	return b.WebhookRepo.Create(ctx, w)
}

// ListWebhooks lists the webhooks within a scope (GET /webhooks).
func (b *Backend) ListWebhooks(ctx context.Context, s api.Scope) ([]*types.Webhook, error) {
	if s.Restricted {
		return b.WebhookRepo.ListTenant(ctx, s.Tenant)
	}
	return b.WebhookRepo.List(ctx)
}

// GetWebhook reads a webhook within a scope (GET /webhooks/{id}).
func (b *Backend) GetWebhook(ctx context.Context, s api.Scope, id string) (*types.Webhook, error) {
	return b.webhook(ctx, s, id)
}

// PatchWebhook applies a PATCH in one read-modify-write of the registry, so concurrent patches of
// different fields all apply.
func (b *Backend) PatchWebhook(ctx context.Context, s api.Scope, id string, apply func(*types.Webhook) (types.Webhook, error)) (*types.Webhook, error) {
	if _, err := b.webhook(ctx, s, id); err != nil {
		return nil, err
	}
	return b.WebhookRepo.Patch(ctx, id, apply)
}

// DeleteWebhook deletes a webhook within a scope (DELETE /webhooks/{id}).
func (b *Backend) DeleteWebhook(ctx context.Context, s api.Scope, id string) error {
	if _, err := b.webhook(ctx, s, id); err != nil {
		return err
	}
	return b.WebhookRepo.Delete(ctx, id)
}

// RotateSecret gives a webhook a new signing secret, the old one kept for grace (POST /webhooks/{id}/rotate-secret).
func (b *Backend) RotateSecret(ctx context.Context, s api.Scope, id string, grace time.Duration) (*types.Webhook, error) {
	if _, err := b.webhook(ctx, s, id); err != nil {
		return nil, err
	}
	return b.WebhookRepo.RotateSecret(ctx, id, grace)
}

// Health is a webhook's circuit, "disabled" for a disabled webhook (api.ViewHealth).
func (b *Backend) Health(ctx context.Context, s api.Scope, id string) (*types.Health, error) {
	wh, err := b.webhook(ctx, s, id)
	if err != nil {
		return nil, err
	}
	h, err := b.WebhookRepo.Health(ctx, id)
	if err == nil && h.ConsecutiveFailures > 0 {
		h.LastFailure, err = b.lastFailure(ctx, id, h.FailingSince)
	}
	return api.ViewHealth(wh, h), err
}

// lastFailureScan is how many of a webhook's newest deliveries lastFailure reads.
const lastFailureScan = CountsRecent

// lastFailure is, in words, the newest attempt among a webhook's newest deliveries that its circuit
// counts as a failure (FailureWords) and that was answered in the current run of failures,
// which began at since; "" when none is.
func (b *Backend) lastFailure(ctx context.Context, id string, since time.Time) (string, error) {
	page, err := b.DeliveryRepo.Page(ctx, id, types.DeliveryQuery{Limit: lastFailureScan})
	if err != nil {
		return "", err
	}
	var words string
	var at time.Time
	for _, dl := range page.Deliveries {
		for _, a := range dl.History {
			answered := a.At.Add(a.Duration)
			if answered.Before(since.Add(-time.Millisecond)) {
				continue // before the run: another story
			}
			if w, ok := FailureWords(a); ok && a.At.After(at) {
				words, at = w, a.At
			}
		}
	}
	return words, nil
}

// Stats is a webhook's attempts per hour by outcome (GET /webhooks/{id}/stats).
func (b *Backend) Stats(ctx context.Context, s api.Scope, id string) ([]types.HourStats, error) {
	if _, err := b.webhook(ctx, s, id); err != nil {
		return nil, err
	}
	return rdb.HourlyStats(ctx, b.Client, b.Keys, id, b.Now())
}

// ProbeNow ends a webhook's open circuit's wait (Backend.Probe): the operator's "probe now".
func (b *Backend) ProbeNow(ctx context.Context, s api.Scope, id string) (*api.ProbeAnswer, error) {
	if _, err := b.webhook(ctx, s, id); err != nil {
		return nil, err
	}
	h, n, err := b.Probe(ctx, id)
	return &api.ProbeAnswer{Circuit: h, DeliveriesDue: n}, err
}

// Counts are a webhook's delivery counts (counts.go).
// A disabled webhook's deliveries wait for no probe: none is parked (they fail without an attempt).
func (b *Backend) Counts(ctx context.Context, s api.Scope, id string) (api.Counts, error) {
	wh, err := b.webhook(ctx, s, id)
	if err != nil {
		return api.Counts{}, err
	}
	c, err := b.counts(ctx, id)
	if wh.Disabled {
		c.Parked = 0
	}
	return c, err
}

// SendTest sends a test event to a webhook within a scope (POST /webhooks/{id}/test).
func (b *Backend) SendTest(ctx context.Context, s api.Scope, id string) (*types.Delivery, error) {
	if _, err := b.webhook(ctx, s, id); err != nil {
		return nil, err
	}
	return b.Actions.SendTest(ctx, id)
}

// Deliveries is a page of a webhook's deliveries, newest first (GET /webhooks/{id}/deliveries).
func (b *Backend) Deliveries(ctx context.Context, s api.Scope, id string, q api.DeliveryQuery) (*api.DeliveryPage, error) {
	wh, err := b.webhook(ctx, s, id)
	if err != nil {
		return nil, err
	}
	page, err := b.DeliveryRepo.Page(ctx, id, types.DeliveryQuery{Status: types.Status(q.Status), Cursor: q.Cursor, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	for _, dl := range page.Deliveries {
		dl.History = nil // GET /deliveries/{id} has it
	}
	views, err := b.viewDeliveries(ctx, map[string]*types.Webhook{id: wh}, page.Deliveries)
	return &api.DeliveryPage{Deliveries: views, NextCursor: page.NextCursor}, err
}

// Recover re-sends a webhook's failed deliveries within a window (POST /webhooks/{id}/recover).
func (b *Backend) Recover(ctx context.Context, s api.Scope, id string, since, until time.Time, limit int) (int, error) {
	if _, err := b.webhook(ctx, s, id); err != nil {
		return 0, err
	}
	if until.IsZero() {
		until = b.Now()
	}
	return b.RecoverFailed(ctx, id, since, until, limit)
}

// Replay dispatches again the events a webhook missed, a page at a time (POST /webhooks/{id}/replay).
func (b *Backend) Replay(ctx context.Context, s api.Scope, id string, since time.Time, cursor string) (int, string, error) {
	if _, err := b.webhook(ctx, s, id); err != nil {
		return 0, "", err
	}
	p, err := b.Actions.ReplayMissingPage(ctx, id, since, cursor)
	return p.Scheduled, p.Next, err
}
