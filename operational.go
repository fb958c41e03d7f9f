package webhooks

// Operational webhooks: the library's own events about its webhooks (a circuit opened or closed, a
// webhook failing or disabled, a delivery failed for good), dispatched through itself as ordinary,
// signed, retried deliveries to the webhooks that subscribe to them (Options.OperationalEvents;
// internal/notify sends them).

import (
	"context"
	"slices"

	"github.com/smartdrop/webhooks/internal/types"
)

// The operational event types (Options.OperationalEvents), each documented in internal/types. Their
// data is an OperationalData.
const (
	EventCircuitOpened   = types.EventCircuitOpened
	EventCircuitClosed   = types.EventCircuitClosed
	EventWebhookFailing  = types.EventWebhookFailing
	EventWebhookDisabled = types.EventWebhookDisabled
	EventDeliveryFailed  = types.EventDeliveryFailed
)

// OperationalWindow is the window of time of which a webhook's deliveries failed for good send one
// delivery.failed event, the first's, which counts the failures of the window before beyond its event
// (OperationalData.MoreFailed).
const OperationalWindow = types.OperationalWindow

// OperationalData is the data of an operational event: the webhook it is about, and per type the
// fields that type sets (internal/types).
type OperationalData = types.OperationalData

// IsOperationalEventType reports whether t is one of the operational event types.
func IsOperationalEventType(t string) bool { return types.IsOperationalEventType(t) }

// enqueueOperational enqueues evt, as Enqueue does, to its tenant's webhooks that subscribe to its type
// by name or prefix (`circuit.*`; `*` alone does not select operational events), except webhook about.
func (d *Dispatcher) enqueueOperational(ctx context.Context, evt Event, about string) error {
	if err := validateEvent(evt); err != nil {
		return err
	}
	body, err := d.events.Encode(evt)
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
