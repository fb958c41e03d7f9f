package admin

// The views across webhooks: a search of deliveries, and the backlog (Handler lists every route).

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/index"
	"github.com/smartdrop/webhooks/internal/types"
)

// MaxSearchWebhooks bounds the webhooks one GET /deliveries examines (the scope's first, in the
// registry's order) where it reads each webhook's own keys: a search by event id, and the operator's
// search without an id; a search reaches no delivery of the others. A tenant's search without an id
// reads the tenant's indexes, and reaches every webhook of the tenant.
const MaxSearchWebhooks = 200

// scopeWebhooks are the webhooks of a scope: every one when all is set, else at most
// MaxSearchWebhooks.
func (b *Backend) scopeWebhooks(ctx context.Context, s api.Scope, all bool) ([]*types.Webhook, error) {
	var list []*types.Webhook
	var err error
	if s.Restricted {
		list, err = b.WebhookRepo.ListTenant(ctx, s.Tenant)
	} else {
		list, err = b.WebhookRepo.List(ctx)
	}
	if !all {
		list = list[:min(len(list), MaxSearchWebhooks)]
	}
	return list, err
}

// SearchDeliveries finds, across the scope's webhooks, the delivery with an id, or the deliveries of
// an event id, kept by the event type, status and creation time asked, newest first. Without an id it
// walks the scope's webhooks' deliveries newest first, merged by the time they were indexed (created
// or redelivered), from q.Cursor (or from q.To), under the search's budget (index.Reader.Search), and
// answers with a cursor that continues the walk and why it stopped.
func (b *Backend) SearchDeliveries(ctx context.Context, s api.Scope, q api.DeliverySearch) (*api.SearchPage, error) {
	status := types.Status(q.Status)
	limit := min(cmp.Or(q.Limit, index.DefaultPageLimit), index.MaxPageLimit)
	if !q.To.IsZero() && q.To.UnixMilli() < 0 { // nothing was created before 1970, and no cursor reaches there
		return &api.SearchPage{Deliveries: []api.DeliveryView{}, Stopped: index.SearchStoppedEnd}, nil
	}
	sq := index.SearchQuery{Status: status, EventType: q.EventType, From: q.From, To: q.To, Limit: limit, Cursor: q.Cursor}
	if q.ID == "" {
		if s.Restricted && s.Tenant != "" {
			sq.Tenant = s.Tenant // its indexes: one per shard, whatever its webhook count
		}
		hooks, err := b.scopeWebhooks(ctx, s, sq.Tenant != "")
		if err != nil {
			return nil, err
		}
		byID := make(map[string]*types.Webhook, len(hooks))
		for _, wh := range hooks {
			sq.WebhookIDs = append(sq.WebhookIDs, wh.ID)
			byID[wh.ID] = wh
		}
		page, err := b.Index.Search(ctx, sq)
		if err != nil {
			return nil, err
		}
		views, err := b.viewDeliveries(ctx, byID, page.Deliveries)
		return &api.SearchPage{Deliveries: views, NextCursor: page.Next, Stopped: page.Stopped}, err
	}
	found, err := b.findDeliveries(ctx, s, q.ID)
	if err != nil {
		return nil, err
	}
	out := make([]*types.Delivery, 0, len(found))
	for _, dl := range found {
		if sq.Keeps(dl) {
			dl.History = nil // GET /deliveries/{id} has it
			out = append(out, dl)
		}
	}
	slices.SortStableFunc(out, func(a, b *types.Delivery) int { return b.CreatedAt.Compare(a.CreatedAt) })
	views, err := b.viewDeliveries(ctx, nil, out[:min(len(out), limit)])
	return &api.SearchPage{Deliveries: views, Stopped: index.SearchStoppedEnd}, err
}

// findDeliveries reads the deliveries an id names in the scope: the delivery of a delivery id, or
// the deliveries of an event id to each of the scope's webhooks.
func (b *Backend) findDeliveries(ctx context.Context, s api.Scope, id string) ([]*types.Delivery, error) {
	if strings.HasPrefix(id, "dlv_") {
		dl, err := b.delivery(ctx, s, id)
		if errors.Is(err, types.ErrNotFound) || errors.Is(err, types.ErrInvalidQuery) {
			return nil, nil
		}
		return []*types.Delivery{dl}, err
	}
	hooks, err := b.scopeWebhooks(ctx, s, false)
	if err != nil {
		return nil, err
	}
	var found []*types.Delivery
	for _, wh := range hooks {
		dl, err := b.DeliveryRepo.Find(ctx, wh.ID, id)
		if errors.Is(err, types.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		found = append(found, dl)
	}
	return found, nil
}

// Backlog is Stats, without the figures per shard, what holds due deliveries, and how many endpoints
// are paused.
func (b *Backend) Backlog(ctx context.Context) (*api.Backlog, error) {
	st, open, err := b.backlogStats(ctx)
	if err != nil {
		return nil, err
	}
	held, err := b.held(ctx, st.At)
	if err != nil {
		return nil, err
	}
	paused, err := b.pausedEndpoints(ctx, open)
	if err != nil {
		return nil, err
	}
	return &api.Backlog{At: st.At, Due: st.Due, Scheduled: st.Scheduled, Leased: st.Leased, OldestDueAt: st.OldestDueAt,
		OldestDueAge: st.OldestDueAge.Milliseconds(), Webhooks: st.Webhooks, OpenCircuits: st.OpenCircuits,
		PausedEndpoints: paused, Truncated: st.Truncated, Held: held}, nil
}

// pausedEndpoints is how many of the webhooks whose circuits are open (ids) are paused: neither gone
// nor disabled (a disabled webhook keeps the circuit it had, and is disabled, not paused). One round
// trip.
func (b *Backend) pausedEndpoints(ctx context.Context, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	whs, err := b.WebhookRepo.StoredByID(ctx, ids)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, wh := range whs {
		if wh != nil && !wh.Disabled {
			n++
		}
	}
	return n, nil
}
