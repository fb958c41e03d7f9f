package types

import "time"

// Hooks are callbacks on delivery outcomes, for metrics and alerts. Every field is optional. A hook
// runs after the outcome is recorded, on the goroutine that made the attempt (inside Dispatch,
// Redeliver or a worker pass), holding no lock or lease, so a slow hook delays only that call; keep
// hooks fast. A panicking hook is recovered and logged.
type Hooks struct {
	// AttemptFinished is called once per recorded HTTP attempt.
	AttemptFinished func(AttemptInfo)
	// DeliverySucceeded is called when a delivery succeeds.
	DeliverySucceeded func(Delivery)
	// DeliveryFailed is called when a delivery fails for good: its retries ran out, its webhook
	// answered 410 Gone, or its webhook was deleted or disabled.
	DeliveryFailed func(Delivery)
	// WebhookDisabled is called when the library disables a webhook (410 Gone, or failing for
	// Options.DisableAfter).
	WebhookDisabled func(webhookID, reason string)
	// CircuitOpened is called when a webhook's circuit opens (or a failed probe opens it again) until
	// the given time, by the replica whose attempt opened it.
	CircuitOpened func(webhookID string, until time.Time)
	// CircuitClosed is called when a successful attempt closes a webhook's circuit.
	CircuitClosed func(webhookID string)
}

// AttemptInfo describes one recorded attempt.
type AttemptInfo struct {
	// Delivery is the delivery as the attempt left it.
	Delivery   Delivery
	StatusCode int
	Duration   time.Duration
	// Error is why the attempt failed, "" on success.
	Error string
}
