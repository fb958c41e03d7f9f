package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
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
// (set in dl itself); Why says why it waits, why a failed one failed (failedWhy), or why one was
// skipped.
func ViewDelivery(dl *types.Delivery, e Endpoint, ok bool, now time.Time) DeliveryView {
	v := DeliveryView{Delivery: dl}
	switch dl.Status {
	case types.StatusFailed:
		v.Why = failedWhy(dl)
		return v
	case types.StatusSkipped:
		v.Why = dl.LastError // the worker's words: its webhook's transformation skipped the event
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

// notAttempted says in words why the worker failed a due delivery without attempting it (its
// LastError).
var notAttempted = map[string]string{
	types.NotAttemptedWebhookDeleted:  "the endpoint was deleted",
	types.NotAttemptedWebhookDisabled: "the endpoint was disabled",
	types.NotAttemptedBodyExpired:     "its event's body had expired",
}

// failedWhy says why a failed delivery failed for good: "never attempted: the endpoint was disabled",
// "failed after 2 attempts, then not attempted again: the endpoint was disabled", "failed after 3
// attempts; the last: the endpoint answered 503 Service Unavailable".
func failedWhy(dl *types.Delivery) string {
	refusal, refused := notAttempted[dl.LastError]
	if !refused {
		refusal = attemptWords(dl.LastStatusCode, dl.LastError)
	}
	attempts := strconv.Itoa(dl.Attempts) + " attempts"
	if dl.Attempts == 1 {
		attempts = "1 attempt"
	}
	switch {
	case dl.Attempts == 0:
		return "never attempted: " + refusal
	case refused:
		return "failed after " + attempts + ", then not attempted again: " + refusal
	case refusal == "":
		return "failed after " + attempts
	}
	return "failed after " + attempts + "; the last: " + refusal
}

// AnswerWords is an endpoint's answer status in words: "the endpoint answered 503 Service
// Unavailable".
func AnswerWords(code int) string {
	return strings.TrimSpace(fmt.Sprintf("the endpoint answered %d %s", code, http.StatusText(code)))
}

// attemptWords is an attempt's failure in words: its status as AnswerWords says it, with what its
// error adds to "HTTP <code>" ("the endpoint answered 410 Gone: the webhook was disabled"); without a
// status, its error, which its destination wrote in words.
func attemptWords(code int, err string) string {
	rest, ok := strings.CutPrefix(err, "HTTP "+strconv.Itoa(code))
	if code == 0 || !ok {
		return err
	}
	rest = strings.TrimPrefix(rest, " "+http.StatusText(code))
	if strings.HasPrefix(rest, " ") {
		rest = ":" + rest
	}
	return AnswerWords(code) + rest
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
