package types

import (
	"slices"
	"time"
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
	// or was disabled or deleted). Never sent about a delivery of an operational event. At most one
	// per webhook per OperationalWindow: the window's first failure's, which says how many more failed
	// in the window before (MoreFailed).
	EventDeliveryFailed = "delivery.failed"
)

// OperationalWindow is the window of time of which a webhook's failures for good send one
// delivery.failed (the first's): 20 failures in 3 s are one event, not 20; the next window's event
// counts the others (OperationalData.MoreFailed).
const OperationalWindow = time.Minute

// operationalTypes are the operational event types, which Dispatch and Enqueue refuse while
// Options.OperationalEvents is set.
var operationalTypes = []string{EventCircuitOpened, EventCircuitClosed, EventWebhookFailing, EventWebhookDisabled,
	EventDeliveryFailed}

// OperationalTypes returns the operational event types.
func OperationalTypes() []string { return slices.Clone(operationalTypes) }

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
	// WindowStart is the start of the OperationalWindow the event stands for: delivery.failed.
	WindowStart time.Time `json:"window_start,omitzero"`
	// MoreFailed is how many more of the webhook's deliveries failed for good in the window before
	// WindowStart than the one that window's event was about (none of them sent an event of its own):
	// delivery.failed.
	MoreFailed int `json:"more_failed,omitempty"`
}
