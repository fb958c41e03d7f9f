package webhooks

import "context"

// ProbeNow ends the wait of a webhook's open circuit: its parked deliveries are made due, and the next
// attempt is the circuit's probe, whose success closes it. It returns the circuit as it is after the
// call. A closed circuit, or one whose probe is in flight, is refused with an error wrapping
// ErrProbeRefused; a disabled webhook with ErrWebhookDisabled (enable it first); an unknown one with
// ErrNotFound.
func (d *Dispatcher) ProbeNow(ctx context.Context, webhookID string) (*Health, error) {
	h, _, err := d.admin.Probe(ctx, webhookID)
	if err != nil && h.WebhookID == "" {
		return nil, err
	}
	return &h, err
}
