package ingest

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/smartdrop/webhooks"
)

// The JSON of ingest's answers (the OpenAPI document, openapi.json, describes them).
type (
	// answerJSON is every answer: events after an enqueue, error when the answer is not a 202.
	answerJSON struct {
		Events []eventResultJSON `json:"events,omitempty"`
		Error  *errorJSON        `json:"error,omitempty"`
	}
	errorJSON struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field,omitempty"`
	}
	// eventResultJSON is one event's outcome, in the order of the request.
	eventResultJSON struct {
		ID       string `json:"id"`
		Tenant   string `json:"tenant,omitempty"`
		Accepted bool   `json:"accepted"`
		// Duplicate: the event had been accepted before, and every webhook's delivery is the one
		// recorded then (nothing is sent again).
		Duplicate bool                `json:"duplicate"`
		Webhooks  []webhookResultJSON `json:"webhooks"`
		Error     *errorJSON          `json:"error,omitempty"`
	}
	// webhookResultJSON is the event's delivery to one webhook.
	webhookResultJSON struct {
		WebhookID  string `json:"webhook_id"`
		Accepted   bool   `json:"accepted"`
		DeliveryID string `json:"delivery_id,omitempty"`
		Status     string `json:"status,omitempty"`
		Duplicate  bool   `json:"duplicate"`
		Error      string `json:"error,omitempty"`
	}
)

// outcome is what became of one event, as the answer's status and the metrics count it.
type outcome int

const (
	accepted    outcome = iota // every webhook's delivery recorded
	conflict                   // the id names another event, or came with another order key: 409
	unavailable                // Redis could not take it (not accepted): 503, send again
	invalid                    // refused by the library's checks: 400
	internal                   // the server's own problem (its options): 500
)

// Outcome names, as metrics label them.
var outcomeNames = [...]string{accepted: "accepted", conflict: "conflict", unavailable: "unavailable", invalid: "invalid",
	internal: "internal"}

// classify is the outcome of an Enqueue's error.
func classify(err error) outcome {
	switch {
	case err == nil:
		return accepted
	case errors.Is(err, webhooks.ErrEventConflict), errors.Is(err, webhooks.ErrOrderKeyConflict):
		return conflict // before ErrInvalidEvent, which a conflict may wrap too
	case errors.Is(err, webhooks.ErrInvalidEvent):
		return invalid
	case errors.Is(err, webhooks.ErrInvalidOptions):
		return internal
	}
	return unavailable // ErrNotAccepted, a transport error, the request's context ended
}

// eventResult is the JSON of one event's results; ok is whether every webhook's delivery is recorded.
func eventResult(evt webhooks.Event, rs []webhooks.Result, err error, o outcome) eventResultJSON {
	out := eventResultJSON{ID: evt.ID, Tenant: evt.Tenant, Accepted: o == accepted, Webhooks: make([]webhookResultJSON, 0, len(rs))}
	dups := 0
	for _, r := range rs {
		w := webhookResultJSON{WebhookID: r.WebhookID, Duplicate: r.Duplicate, Accepted: r.Delivery != nil}
		if r.Delivery != nil {
			w.DeliveryID, w.Status = r.Delivery.ID, string(r.Delivery.Status)
		} else {
			w.Error = "not accepted: Redis could not take it; send the event again" // the cause is logged, not sent
		}
		if r.Duplicate {
			dups++
		}
		out.Webhooks = append(out.Webhooks, w)
	}
	out.Duplicate = o == accepted && len(rs) > 0 && dups == len(rs)
	if o != accepted {
		out.Error = eventError(err, o)
	}
	return out
}

// eventError is the error of an event not accepted, in words.
func eventError(err error, o outcome) *errorJSON {
	switch o {
	case conflict:
		if errors.Is(err, webhooks.ErrOrderKeyConflict) {
			return &errorJSON{Code: "conflict", Field: "order_key", Message: "this event id was accepted before with another order_key: " +
				"send it with the order_key it first had, or use a new id for a new event"}
		}
		return &errorJSON{Code: "conflict", Field: "id", Message: "this event id was accepted before for another event " +
			"(another type or data): an id names one event; give a new event a new id"}
	case unavailable:
		return &errorJSON{Code: "unavailable", Message: "not accepted: Redis could not take it; send it again (safe: an event " +
			"accepted before comes back as a duplicate)"}
	case invalid:
		return &errorJSON{Code: "invalid_request", Field: invalidField(err), Message: words(err)}
	}
	return &errorJSON{Code: "internal", Message: "the server could not take the event because of its own configuration; its log says why"}
}

// words is a library error as a sentence for the client: without the library's prefixes.
func words(err error) string {
	m := err.Error()
	for _, p := range []string{"webhooks: invalid event: ", "webhooks: event not accepted: ", "webhooks: "} {
		m = strings.ReplaceAll(m, p, "")
	}
	return m
}

// invalidField is the event field a library error about an invalid event is about.
func invalidField(err error) string {
	m := words(err)
	switch {
	case strings.HasPrefix(m, "type ") || strings.Contains(m, "catalog of event types") || strings.Contains(m, "operational event type"):
		return "type"
	case strings.HasPrefix(m, "id "):
		return "id"
	case strings.HasPrefix(m, "order key"):
		return "order_key"
	case strings.Contains(m, "tenant"):
		return "tenant"
	}
	return "data" // the schema of its type, its encoding, its size
}

// tooLargeEncoded reports whether a library error refuses an event for its encoded size.
func tooLargeEncoded(err error) bool {
	return errors.Is(err, webhooks.ErrInvalidEvent) && strings.Contains(err.Error(), "encoded body is ")
}

// writeJSON writes v as the answer, with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"the answer did not encode"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// WriteError writes an error answer of the shape every route of webhooksd uses.
func WriteError(w http.ResponseWriter, status int, code, message, field string) {
	writeJSON(w, status, answerJSON{Error: &errorJSON{Code: code, Message: message, Field: field}})
}
