package api

import (
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/types"
)

// Endpoint is what a delivery's answer needs of its webhook now.
type Endpoint struct {
	Disabled       bool
	DisabledReason string // types.Webhook.DisabledReason
	Health         types.Health
}

// ViewDelivery is dl as the API answers it, its webhook e (known: ok) at now: a pending delivery's
// NextAttemptAt is not before its paused webhook's next probe, and none while its webhook is disabled
// (set in dl itself); Why says why it waits, or why a failed one was never attempted.
func ViewDelivery(dl *types.Delivery, e Endpoint, ok bool, now time.Time) DeliveryView {
	v := DeliveryView{Delivery: dl}
	switch dl.Status {
	case types.StatusFailed:
		if dl.Attempts == 0 {
			v.Why = "never attempted: " + dl.LastError
		}
		return v
	case types.StatusPending:
	default:
		return v
	}
	switch {
	case !ok:
	case e.Disabled:
		v.NextAttemptAt = time.Time{}
		v.Why = "not to be attempted: the endpoint is disabled (" + e.DisabledReason + "); the delivery fails without an attempt"
		return v
	case e.Health.State == types.CircuitOpen || e.Health.State == types.CircuitProbing:
		if !dl.NextAttemptAt.After(e.Health.OpenUntil) {
			v.NextAttemptAt = e.Health.OpenUntil // the later of the two
		}
		v.Why = fmt.Sprintf("waiting: the endpoint is paused after %d failed attempts in a row, until %s (UTC); nothing is sent to it before",
			e.Health.ConsecutiveFailures, e.Health.OpenUntil.UTC().Format(time.DateTime))
		return v
	}
	if dl.Attempts == 0 && dl.OrderKey != "" {
		v.Why = "not attempted yet: sent in its turn, after the earlier deliveries of order key " + dl.OrderKey
	} else if dl.Attempts == 0 {
		v.Why = "not attempted yet: due at " + dl.NextAttemptAt.UTC().Format(time.DateTime) + " (UTC)"
		if !dl.NextAttemptAt.After(now) {
			v.Why = "not attempted yet: due now, waiting for a worker"
		}
	}
	return v
}

// ViewHealth is a webhook's circuit as the API answers it: a disabled webhook's is "disabled", with
// no next probe (none goes out), its run of failures kept (why it was disabled, when it was by that
// rule).
func ViewHealth(wh *types.Webhook, h *types.Health) *types.Health {
	if h != nil && wh.Disabled {
		h.State, h.OpenUntil, h.OpenFor = types.CircuitDisabled, time.Time{}, 0
	}
	return h
}
