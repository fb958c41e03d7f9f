package webhooks

// Operational webhooks: the library's own events about its webhooks (a circuit opened or closed, a
// webhook failing or disabled, a delivery failed for good), dispatched through itself as ordinary,
// signed, retried deliveries to the webhooks that subscribe to them (Options.OperationalEvents).

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/smartdrop/webhooks/internal/endpoint"
	"github.com/smartdrop/webhooks/internal/rdb"
)

// The operational event types (Options.OperationalEvents). Their data is an OperationalData.
const (
	// EventCircuitOpened: a webhook's circuit opened; once per run of failures (a failed probe that
	// opens it again sends nothing more).
	EventCircuitOpened = "circuit.opened"
	// EventCircuitClosed: a successful attempt closed a webhook's open circuit.
	EventCircuitClosed = "circuit.closed"
	// EventWebhookFailing: a webhook's run of failed attempts reached half of Options.DisableAfter;
	// once per run, an early warning before it is disabled.
	EventWebhookFailing = "webhook.failing"
	// EventWebhookDisabled: the library disabled a webhook (410 Gone, or failing for DisableAfter).
	EventWebhookDisabled = "webhook.disabled"
	// EventDeliveryFailed: a delivery failed for good (its retries ran out, its webhook answered 410
	// or was disabled or deleted). Never sent about a delivery of an operational event.
	EventDeliveryFailed = "delivery.failed"
)

// operationalTypes are the operational event types, which Dispatch and Enqueue refuse while
// Options.OperationalEvents is set.
var operationalTypes = []string{EventCircuitOpened, EventCircuitClosed, EventWebhookFailing, EventWebhookDisabled,
	EventDeliveryFailed}

// IsOperationalEventType reports whether t is one of the operational event types.
func IsOperationalEventType(t string) bool { return slices.Contains(operationalTypes, t) }

// OperationalData is the data of an operational event: the webhook it is about, and per type the
// fields that type sets (the others are left out of the JSON).
type OperationalData struct {
	// WebhookID, Tenant and URL name the webhook the event is about; URL without credentials or query.
	WebhookID string `json:"webhook_id"`
	Tenant    string `json:"tenant,omitempty"`
	URL       string `json:"url,omitempty"`
	// State is the circuit's state: circuit.*, webhook.failing.
	State CircuitState `json:"state,omitempty"`
	// Failures is the circuit's count of consecutive failed attempts: circuit.opened, webhook.failing.
	Failures int `json:"failures,omitempty"`
	// FailingSince is when the run of failed attempts began: circuit.opened, webhook.failing,
	// webhook.disabled (when disabled for DisableAfter).
	FailingSince time.Time `json:"failing_since,omitzero"`
	// OpenUntil is when the circuit's probe may go out: circuit.opened.
	OpenUntil time.Time `json:"open_until,omitzero"`
	// DisableAt is when the webhook is disabled if its attempts keep failing: webhook.failing.
	DisableAt time.Time `json:"disable_at,omitzero"`
	// Reason is why the webhook was disabled: webhook.disabled.
	Reason string `json:"reason,omitempty"`
	// The delivery that failed for good, its event and its last attempt: delivery.failed.
	DeliveryID     string `json:"delivery_id,omitempty"`
	EventID        string `json:"event_id,omitempty"`
	EventType      string `json:"event_type,omitempty"`
	Attempts       int    `json:"attempts,omitempty"`
	LastStatusCode int    `json:"last_status_code,omitempty"`
	LastError      string `json:"last_error,omitempty"`
}

// checkReserved refuses an operational event type in Dispatch and Enqueue while the library sends
// them itself, so a receiver can trust that they come from it.
func (d *Dispatcher) checkReserved(eventType string) error {
	if d.opts.OperationalEvents && IsOperationalEventType(eventType) {
		return fmt.Errorf("%w: type %q is an operational event type, sent only by the library (Options.OperationalEvents)",
			ErrInvalidEvent, eventType)
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

// circuitChanged sends circuit.opened or circuit.closed about webhook id, its circuit h as the count
// left it at now. An open circuit's event is keyed by its run of failures (a reopening is a
// duplicate); a close by its time: the exact count reports each close to one replica only.
func (d *Dispatcher) circuitChanged(ctx context.Context, typ, id string, h Health, now time.Time) {
	key := runKey(h)
	data := OperationalData{State: h.State, Failures: h.ConsecutiveFailures, FailingSince: h.FailingSince,
		OpenUntil: h.OpenUntil}
	if typ == EventCircuitClosed {
		key, data = strconv.FormatInt(now.UnixMilli(), 10), OperationalData{State: CircuitClosed}
	}
	d.sendOperational(ctx, typ, id, key, now, data)
}

// warnIfFailing sends webhook.failing once per run of failures, when the run reaches half of
// DisableAfter.
func (d *Dispatcher) warnIfFailing(ctx context.Context, id string, h Health) {
	if !d.opts.OperationalEvents || d.opts.DisableAfter <= 0 || h.FailingSince.IsZero() ||
		d.now().Sub(h.FailingSince) < d.opts.DisableAfter/2 || !d.failing.first(id, h.FailingSince.UnixMilli()) {
		return
	}
	state := h.State
	if state == "" {
		state = CircuitClosed
	}
	d.sendOperational(ctx, EventWebhookFailing, id, runKey(h), d.now(),
		OperationalData{State: state, Failures: h.ConsecutiveFailures, FailingSince: h.FailingSince,
			DisableAt: h.FailingSince.Add(d.opts.DisableAfter)})
}

// deliveryFailed sends delivery.failed about a delivery that failed for good, unless it delivered an
// operational event itself: a failing operational delivery tells no one, so two failing webhooks
// subscribed to delivery.failed cannot feed each other for ever.
func (d *Dispatcher) deliveryFailed(ctx context.Context, rec *rdb.Record) {
	if !d.opts.OperationalEvents || IsOperationalEventType(rec.EventType) {
		return
	}
	d.sendOperational(ctx, EventDeliveryFailed, rec.WebhookID, writeKey(rec),
		rec.UpdatedAt, OperationalData{DeliveryID: rec.ID, EventID: rec.EventID, EventType: rec.EventType,
			Attempts: rec.Attempts, LastStatusCode: rec.LastStatusCode, LastError: rec.LastError})
}

// runKey names a run of failures in an operational event id: its start (ms).
func runKey(h Health) string { return strconv.FormatInt(h.FailingSince.UnixMilli(), 10) }

// writeKey names a delivery's final write in an operational event id: its id and its update time (ms),
// which Redeliver and a new final outcome change.
func writeKey(rec *rdb.Record) string {
	return rec.ID + ":" + strconv.FormatInt(rec.UpdatedAt.UnixMilli(), 10)
}

// sendOperational enqueues an operational event of type typ about webhook id, with the event id
// "<type>:<webhook id>:<key>" (key names the transition: a run's start, a delivery and its last
// write), so that replicas noticing the same transition, or a call retried, claim one delivery per
// subscriber. It goes to the subscribers of the webhook's tenant (Event.Tenant = the tenant) and to
// those with no tenant (the operator's), never to the webhook it is about. A failure is logged.
func (d *Dispatcher) sendOperational(ctx context.Context, typ, id, key string, at time.Time, data OperationalData) {
	if !d.opts.OperationalEvents {
		return
	}
	found, _, err := d.webhooks.byIDs(ctx, []string{id})
	if err != nil {
		d.log.Warn("webhooks: operational event: load webhook", "type", typ, "webhook_id", id, "error", err)
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
	evt := Event{Type: typ, ID: typ + ":" + id + ":" + key, Data: data, Time: at}
	for _, tenant := range scopes {
		evt.Tenant = tenant
		if err := d.enqueueOperational(ctx, evt, id); err != nil {
			d.log.Warn("webhooks: operational event not enqueued", "type", typ, "event_id", evt.ID, "tenant", tenant,
				"error", err)
		}
	}
}

// enqueueOperational enqueues evt, as Enqueue does, to its tenant's webhooks that subscribe to its type
// by name or prefix (`circuit.*`; `*` alone does not select operational events), except webhook about.
func (d *Dispatcher) enqueueOperational(ctx context.Context, evt Event, about string) error {
	if err := validateEvent(evt); err != nil {
		return err
	}
	body, err := d.encode(evt)
	if err != nil {
		return err
	}
	targets, err := d.targets(ctx, evt, body)
	if err != nil {
		return err
	}
	targets = slices.DeleteFunc(targets, func(t *storedWebhook) bool {
		return t.ID == about || !slices.ContainsFunc(t.Events, func(p string) bool { return p != "*" && matchPattern(p, evt.Type) })
	})
	if len(targets) == 0 {
		return nil
	}
	return notAccepted(evt.ID, d.claimAndAttempt(ctx, evt.Tenant, evt.ID, evt.Type, "", body, targets, false))
}

// utc is t in UTC, the zero time left zero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}
