package webhooks

// The admin API's views across webhooks: a search of deliveries, and the backlog (Handler lists
// every route).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/smartdrop/webhooks/internal/api"
)

// MaxSearchWebhooks bounds the webhooks one GET /deliveries examines (the scope's first, in the
// registry's order); a search reaches no delivery of the others.
const MaxSearchWebhooks = 200

// scopeWebhooks are the webhooks of a scope, at most MaxSearchWebhooks.
func (b adminBackend) scopeWebhooks(ctx context.Context, s api.Scope) ([]*Webhook, error) {
	var list []*Webhook
	var err error
	if s.Restricted {
		list, err = b.d.webhooks.ListTenant(ctx, s.Tenant)
	} else {
		list, err = b.d.webhooks.List(ctx)
	}
	return list[:min(len(list), MaxSearchWebhooks)], err
}

// SearchDeliveries finds, across the scope's webhooks, the delivery with an id, or the deliveries of
// an event id; without an id, the newest Limit deliveries (with the status) of each webhook listed by
// To (its index from To on: see listedBy). Then it keeps those of the event type, status and
// creation time asked, newest first, at most Limit.
func (b adminBackend) SearchDeliveries(ctx context.Context, s api.Scope, q api.DeliverySearch) ([]byte, error) {
	status := Status(q.Status)
	if !slices.Contains([]Status{"", StatusPending, StatusSuccess, StatusFailed}, status) {
		return nil, fmt.Errorf("%w: status must be pending, success or failed", errBadRequest)
	}
	limit := min(cmp.Or(q.Limit, DefaultPageLimit), MaxPageLimit)
	if !q.To.IsZero() && q.To.UnixMilli() < 0 { // nothing was created before 1970, and no cursor reaches there
		return encode(struct {
			Deliveries []*Delivery `json:"deliveries"`
		}{[]*Delivery{}}, nil)
	}
	found, err := b.findDeliveries(ctx, s, q.ID, DeliveryQuery{Status: status, Limit: limit, Cursor: listedBy(q.To)})
	if err != nil {
		return nil, err
	}
	out := make([]*Delivery, 0, len(found))
	for _, dl := range found {
		if (status == "" || dl.Status == status) && (q.EventType == "" || dl.EventType == q.EventType) && within(dl.CreatedAt, q.From, q.To) {
			dl.History = nil // GET /deliveries/{id} has it
			out = append(out, dl)
		}
	}
	slices.SortStableFunc(out, func(a, b *Delivery) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return encode(struct {
		Deliveries []*Delivery `json:"deliveries"`
	}{out[:min(len(out), limit)]}, nil)
}

// listedBy is the cursor of a listing from the last delivery indexed (created or redelivered) at or
// before to: a search bounded by time starts there, not at the newest. "" (the newest) for a zero to.
// A delivery created by to but redelivered after it is listed at its redelivery, and such a search does
// not meet it.
func listedBy(to time.Time) string {
	if to.IsZero() {
		return ""
	}
	return pagePos{ms: to.UnixMilli() + 1}.cursor() // exclusive: every entry of to's millisecond is after it
}

// within reports whether t is in [from, to], a zero bound being none.
func within(t, from, to time.Time) bool {
	return (from.IsZero() || !t.Before(from)) && (to.IsZero() || !t.After(to))
}

// findDeliveries reads the candidates of a search: by delivery id, by event id, or each webhook's
// newest (q: their status, how many, from where).
func (b adminBackend) findDeliveries(ctx context.Context, s api.Scope, id string, q DeliveryQuery) ([]*Delivery, error) {
	if strings.HasPrefix(id, "dlv_") {
		dl, err := b.delivery(ctx, s, id)
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidQuery) {
			return nil, nil
		}
		return []*Delivery{dl}, err
	}
	hooks, err := b.scopeWebhooks(ctx, s)
	if err != nil {
		return nil, err
	}
	var found []*Delivery
	for _, wh := range hooks {
		if id != "" {
			dl, err := b.d.deliveries.Find(ctx, wh.ID, id)
			if errors.Is(err, ErrNotFound) {
				continue
			} else if err != nil {
				return nil, err
			}
			found = append(found, dl)
			continue
		}
		page, err := b.d.deliveries.Page(ctx, wh.ID, q)
		if errors.Is(err, ErrNotFound) {
			continue // deleted since listed
		} else if err != nil {
			return nil, err
		}
		found = append(found, page.Deliveries...)
	}
	return found, nil
}

// backlogView is Stats as the API sends it.
type backlogView struct {
	At           time.Time `json:"at"`
	Due          int64     `json:"due"`
	Scheduled    int64     `json:"scheduled"`
	Leased       int64     `json:"leased"`
	OldestDueAt  time.Time `json:"oldest_due_at,omitzero"`
	OldestDueAge int64     `json:"oldest_due_age_ms"`
	Webhooks     int64     `json:"webhooks"`
	OpenCircuits int       `json:"open_circuits"`
	Truncated    bool      `json:"truncated"`
}

// Backlog is Stats, without the figures per shard.
func (b adminBackend) Backlog(ctx context.Context) ([]byte, error) {
	st, err := b.d.Stats(ctx)
	if err != nil {
		return nil, err
	}
	return encode(backlogView{At: st.At, Due: st.Due, Scheduled: st.Scheduled, Leased: st.Leased, OldestDueAt: st.OldestDueAt,
		OldestDueAge: st.OldestDueAge.Milliseconds(), Webhooks: st.Webhooks, OpenCircuits: st.OpenCircuits, Truncated: st.Truncated}, nil)
}
