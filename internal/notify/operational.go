package notify

// Operational events: the library's own events about its webhooks (a circuit opened or closed, a
// webhook failing or disabled, a delivery failed for good), dispatched through itself as ordinary,
// signed, retried deliveries to the webhooks that subscribe to them (Options.OperationalEvents; the
// types and their data are internal/types').

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/smartdrop/webhooks/internal/endpoint"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// Reserved refuses an operational event type in Dispatch and Enqueue while the library sends them
// itself, so a receiver can trust that they come from it.
func (n *Notifier) Reserved(eventType string) error {
	if n.OperationalEvents && types.IsOperationalEventType(eventType) {
		return fmt.Errorf("%w: type %q is an operational event type, sent only by the library (Options.OperationalEvents)",
			types.ErrInvalidEvent, eventType)
	}
	return nil
}

// failingMemo remembers, per webhook, the run of failures (its start, ms) this replica has sent
// webhook.failing for, so that it claims the event once per run, not at every later failure. Its
// zero value is ready; safe for concurrent use.
type failingMemo struct {
	mu     sync.Mutex
	warned map[string]int64
}

// first reports whether the run of webhookID that began at since is not yet warned of, and marks it.
func (m *failingMemo) first(webhookID string, since int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.warned[webhookID] == since {
		return false
	}
	if m.warned == nil || len(m.warned) > 10_000 {
		m.warned = map[string]int64{} // bounded: at worst a replica claims a duplicate, which dedups
	}
	m.warned[webhookID] = since
	return true
}

// FailingWarned is the start (ms) of the run of failures of webhookID that this replica last sent
// webhook.failing for, 0 for none.
func (n *Notifier) FailingWarned(webhookID string) int64 {
	n.failing.mu.Lock()
	defer n.failing.mu.Unlock()
	return n.failing.warned[webhookID]
}

// circuitChanged sends circuit.opened or circuit.closed about webhook id, its circuit h as the count
// left it at now. An open circuit's event is keyed by its run of failures (a reopening is a
// duplicate); a close by its time: the exact count reports each close to one replica only.
func (n *Notifier) circuitChanged(ctx context.Context, typ, id string, h types.Health, now time.Time) {
	key := runKey(h)
	data := types.OperationalData{State: h.State, Failures: h.ConsecutiveFailures, FailingSince: h.FailingSince,
		OpenUntil: h.OpenUntil}
	if typ == types.EventCircuitClosed {
		key, data = strconv.FormatInt(now.UnixMilli(), 10), types.OperationalData{State: types.CircuitClosed}
	}
	n.send(ctx, typ, id, key, now, data)
}

// warnIfFailing sends webhook.failing once per run of failures, when the run reaches half of
// DisableAfter.
func (n *Notifier) warnIfFailing(ctx context.Context, id string, h types.Health) {
	if !n.OperationalEvents || n.DisableAfter <= 0 || h.FailingSince.IsZero() ||
		n.Now().Sub(h.FailingSince) < n.DisableAfter/2 || !n.failing.first(id, h.FailingSince.UnixMilli()) {
		return
	}
	state := h.State
	if state == "" {
		state = types.CircuitClosed
	}
	n.send(ctx, types.EventWebhookFailing, id, runKey(h), n.Now(),
		types.OperationalData{State: state, Failures: h.ConsecutiveFailures, FailingSince: h.FailingSince,
			DisableAt: h.FailingSince.Add(n.DisableAfter)})
}

// deliveryFailed sends delivery.failed about a delivery that failed for good, unless it delivered an
// operational event itself (a failing operational delivery tells no one, so two failing webhooks
// subscribed to delivery.failed cannot feed each other for ever), or another failure of its webhook
// came first in its window (types.OperationalWindow): one event per webhook per window, every replica
// together (rdb.CountFailed counts them; the event's id, keyed by the window, dedups what a count lost
// to an error lets through). The event says how many more failed in the window before.
func (n *Notifier) deliveryFailed(ctx context.Context, rec *rdb.Record) {
	if !n.OperationalEvents || types.IsOperationalEventType(rec.EventType) {
		return
	}
	window := types.OperationalWindow.Milliseconds()
	start := rec.UpdatedAt.UnixMilli() / window * window
	more := 0
	reply, err := rdb.CountFailed.Run(ctx, n.Client, []string{n.Keys.FailedCount(rec.WebhookID, start),
		n.Keys.FailedCount(rec.WebhookID, start-window)}, window).Int64Slice()
	switch {
	case err != nil || len(reply) != 2:
		n.Log.Warn("webhooks: operational event: count failed deliveries", "webhook_id", rec.WebhookID, "error", err)
	case reply[0] > 1:
		return // the window's event is sent
	case reply[1] > 1:
		more = int(reply[1] - 1)
	}
	n.send(ctx, types.EventDeliveryFailed, rec.WebhookID, "w"+strconv.FormatInt(start, 10),
		rec.UpdatedAt, types.OperationalData{DeliveryID: rec.ID, EventID: rec.EventID, EventType: rec.EventType,
			Attempts: rec.Attempts, LastStatusCode: rec.LastStatusCode, LastError: rec.LastError,
			WindowStart: time.UnixMilli(start).UTC(), MoreFailed: more})
}

// runKey names a run of failures in an operational event id: its start (ms).
func runKey(h types.Health) string { return strconv.FormatInt(h.FailingSince.UnixMilli(), 10) }

// writeKey names a delivery's final write in an operational event id: its id and its update time (ms),
// which Redeliver and a new final outcome change.
func writeKey(rec *rdb.Record) string {
	return rec.ID + ":" + strconv.FormatInt(rec.UpdatedAt.UnixMilli(), 10)
}

// send enqueues an operational event of type typ about webhook id, with the event id
// "<type>:<webhook id>:<key>" (key names the transition: a run's start, a delivery and its last
// write), so that replicas noticing the same transition, or a call retried, claim one delivery per
// subscriber. It goes to the subscribers of the webhook's tenant (Event.Tenant = the tenant) and to
// those with no tenant (the operator's), never to the webhook it is about. A failure is logged.
func (n *Notifier) send(ctx context.Context, typ, id, key string, at time.Time, data types.OperationalData) {
	if !n.OperationalEvents {
		return
	}
	found, err := n.Webhooks.StoredByID(ctx, []string{id})
	if err != nil {
		n.Log.Warn("webhooks: operational event: load webhook", "type", typ, "webhook_id", id, "error", err)
		return
	}
	data.WebhookID = id
	data.FailingSince, data.OpenUntil, data.DisableAt = utc(data.FailingSince), utc(data.OpenUntil), utc(data.DisableAt)
	if s := found[id]; s != nil { // a deleted webhook's events go to the operator only
		data.Tenant, data.URL = s.Tenant, endpoint.RedactURL(s.URL)
	}
	scopes := []string{""}
	if data.Tenant != "" {
		scopes = append(scopes, data.Tenant)
	}
	evt := types.Event{Type: typ, ID: typ + ":" + id + ":" + key, Data: data, Time: at}
	for _, tenant := range scopes {
		evt.Tenant = tenant
		if err := n.Enqueue(ctx, evt, id); err != nil {
			n.Log.Warn("webhooks: operational event not enqueued", "type", typ, "event_id", evt.ID, "tenant", tenant,
				"error", err)
		}
	}
}

// utc is t in UTC, the zero time left zero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}
