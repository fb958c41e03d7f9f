package webhooks

// A webhook's disabled state as a caller changes it (the library disables one itself through
// internal/notify).

import "time"

// operatorDisabled is the DisabledReason of a webhook a caller disabled without giving one.
const operatorDisabled = "disabled by an operator"

// stampDisabled keeps w's DisabledReason and DisabledAt true to its Disabled, was being the webhook
// before the change: cleared when it is enabled; stamped with now when it becomes disabled (the reason
// given, else operatorDisabled); while it stays disabled, DisabledAt as it was and the reason as given
// (else as it was).
func stampDisabled(was, w *Webhook, now time.Time) {
	switch {
	case !w.Disabled:
		w.DisabledReason, w.DisabledAt = "", time.Time{}
	case !was.Disabled:
		w.DisabledAt = now
		if w.DisabledReason == "" {
			w.DisabledReason = operatorDisabled
		}
	default:
		w.DisabledAt = was.DisabledAt
		if w.DisabledReason == "" {
			w.DisabledReason = was.DisabledReason
		}
	}
}
