// Package ingest is webhooksd's POST /v1/events: events sent over HTTP, enqueued with the library's
// Enqueue (no attempt inline: the worker sends them), idempotent by event id exactly as Dispatch is.
//
// A request is one event object, or {"events": [...]} of at most MaxBatch. Each event is
// {"id", "type", "tenant"?, "order_key"?, "time"?, "data"?}; its id is the idempotency key: the same
// event sent again is answered with the deliveries recorded the first time, marked duplicate, and
// nothing is sent again. Answers (openapi.json):
//
//	202 every event accepted: {"events": [{"id", "accepted", "duplicate", "webhooks": [{"webhook_id",
//	    "delivery_id", "status", "duplicate"}]}]}, in the order of the request
//	400 a malformed or invalid event: {"error": {"code", "message", "field"}}, the field named as in the
//	    request (events[3].type); a batch with one invalid event is refused whole, nothing enqueued
//	409 an id that names another event, or came before with another order key (per event)
//	413 a request or event over the bounds
//	503 Redis could not take an event (Retry-After; sending the same request again is safe), or the
//	    server is shutting down
package ingest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/smartdrop/webhooks"

	"github.com/smartdrop/webhooks/webhooksd/internal/reqid"
)

// Dispatcher is what ingest uses of a *webhooks.Dispatcher.
type Dispatcher interface {
	Enqueue(ctx context.Context, evt webhooks.Event) ([]webhooks.Result, error)
	ValidateEvent(ctx context.Context, evt webhooks.Event) error
}

// Observer counts ingest's requests and events (the server's Prometheus metrics).
type Observer interface {
	// Request is one request's answer: its shape ("single" or "batch", "none" when it did not
	// decode), status and duration.
	Request(shape string, status int, took time.Duration)
	// Events counts events by outcome: accepted, duplicate, invalid, conflict, unavailable, internal,
	// refused (while shutting down).
	Events(outcome string, n int)
}

// RetryAfter is the Retry-After of a 503, in seconds.
const RetryAfter = 1

// DefaultTimeout bounds the enqueue of one request's events.
const DefaultTimeout = 10 * time.Second

// Handler serves POST /v1/events. Its fields are set before it serves.
type Handler struct {
	D Dispatcher
	// MaxPayloadBytes is the Dispatcher's Options.MaxPayloadBytes (with its default).
	MaxPayloadBytes int
	// Refusing, when it returns a reason, makes every request a 503 (the server is shutting down).
	Refusing func() string
	// Timeout bounds a request's enqueue. Defaults to DefaultTimeout.
	Timeout time.Duration
	Log     *slog.Logger
	Observe Observer
}

// MaxBody is the bound of a request's body: MaxBatch events of at most maxPayload bytes of data each,
// and their envelopes.
func MaxBody(maxPayload int) int64 { return int64(MaxBatch)*int64(maxPayload+envelopeBytes) + 1024 }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	began, shape := time.Now(), "none"
	rec := &statusRecorder{ResponseWriter: w}
	defer func() { h.Observe.Request(shape, rec.status, time.Since(began)) }()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		WriteError(rec, http.StatusMethodNotAllowed, "method_not_allowed", "send events with POST", "")
		return
	}
	if reason := h.Refusing(); reason != "" {
		h.Observe.Events("refused", 1)
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
		WriteError(rec, http.StatusServiceUnavailable, "shutting_down", reason+": nothing of this request was accepted; "+
			"send it again (to another replica, or once this one is back)", "")
		return
	}
	limit := MaxBody(h.MaxPayloadBytes)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			WriteError(rec, http.StatusRequestEntityTooLarge, "too_large", "the request is over "+strconv.FormatInt(limit, 10)+
				" bytes: send at most "+strconv.Itoa(MaxBatch)+" events of at most "+strconv.Itoa(h.MaxPayloadBytes)+" bytes each", "")
			return
		}
		WriteError(rec, http.StatusBadRequest, "invalid_request", "the request's body could not be read: send it again", "")
		return
	}
	d, rerr := decode(body, h.MaxPayloadBytes)
	if rerr == nil && d.batch {
		rerr = h.validate(r.Context(), d)
	}
	if rerr != nil {
		h.Observe.Events("invalid", 1)
		WriteError(rec, rerr.status, rerr.code, rerr.message, rerr.field)
		return
	}
	shape = "single"
	if d.batch {
		shape = "batch"
	}
	h.enqueue(rec, r, d)
}

// validate runs the library's checks on every event of a batch before any is enqueued, so that an
// invalid event refuses the batch whole.
func (h *Handler) validate(ctx context.Context, d *decoded) *requestError {
	for i, evt := range d.events {
		if err := h.D.ValidateEvent(ctx, evt); err != nil {
			if tooLargeEncoded(err) {
				return tooLarge(d.fields[i]+"data", "%s: the server's -max-payload-bytes is %d", words(err), h.MaxPayloadBytes)
			}
			if errors.Is(err, webhooks.ErrInvalidEvent) {
				return badRequest(d.fields[i]+invalidField(err), "%s%s", eventName(d, i), words(err))
			}
			// Not the event's fault (the catalog could not be read): Enqueue will say.
		}
	}
	return nil
}

func eventName(d *decoded, i int) string {
	if !d.batch {
		return ""
	}
	return "events[" + strconv.Itoa(i) + "]: "
}

// enqueue enqueues the events (a batch's concurrently) and answers with each one's results.
func (h *Handler) enqueue(w http.ResponseWriter, r *http.Request, d *decoded) {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	n := len(d.events)
	results, outcomes, errs := make([]eventResultJSON, n), make([]outcome, n), make([]error, n)
	one := func(i int) {
		rs, err := h.D.Enqueue(ctx, d.events[i])
		outcomes[i], errs[i] = classify(err), err
		results[i] = eventResult(d.events[i], rs, err, outcomes[i])
	}
	if n == 1 {
		one(0)
	} else {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { one(i) })
		}
		wg.Wait()
	}
	h.answer(w, r, d, results, outcomes, errs)
}

// answer writes the answer of enqueued events: 202 when all were accepted, else the status of the
// worst outcome, with every event's results.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, d *decoded, results []eventResultJSON, outcomes []outcome, errs []error) {
	worst, at := accepted, -1
	var counts [len(outcomeNames)]int
	dups := 0
	for i, o := range outcomes {
		counts[o]++
		if o == accepted && results[i].Duplicate {
			dups++
		}
		if severity(o) > severity(worst) {
			worst, at = o, i
		}
	}
	for o, c := range counts {
		if name := outcomeNames[o]; o == int(accepted) {
			h.Observe.Events("accepted", c-dups)
			h.Observe.Events("duplicate", dups)
		} else if c > 0 {
			h.Observe.Events(name, c)
		}
	}
	if worst == accepted {
		writeJSON(w, http.StatusAccepted, answerJSON{Events: results})
		return
	}
	id := reqid.From(r.Context())
	err := errs[at]
	switch worst {
	case invalid: // a single event (a batch was validated first), or the catalog changed meanwhile
		if tooLargeEncoded(err) {
			WriteError(w, http.StatusRequestEntityTooLarge, "too_large", eventName(d, at)+words(err)+
				": the server's -max-payload-bytes is "+strconv.Itoa(h.MaxPayloadBytes), d.fields[at]+"data")
			return
		}
		writeJSON(w, http.StatusBadRequest, answerJSON{Events: d.eventsIf(results), Error: &errorJSON{Code: "invalid_request",
			Field: d.fields[at] + invalidField(err), Message: eventName(d, at) + words(err)}})
	case internal:
		h.Log.Error("webhooksd: ingest refused by the server's configuration", "request_id", id, "error", err)
		writeJSON(w, http.StatusInternalServerError, answerJSON{Events: results, Error: &errorJSON{Code: "internal",
			Message: "the server could not take events because of its own configuration; its log says why (request id " + id + ")"}})
	case unavailable:
		h.Log.Warn("webhooksd: events not accepted: Redis could not take them", "request_id", id,
			"not_accepted", counts[unavailable], "events", len(outcomes), "error", err)
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
		writeJSON(w, http.StatusServiceUnavailable, answerJSON{Events: results, Error: &errorJSON{Code: "unavailable",
			Message: strconv.Itoa(counts[unavailable]) + " of " + strconv.Itoa(len(outcomes)) + " events were not accepted: " +
				"Redis could not take them (request id " + id + "). Send the same request again: it is safe, every event " +
				"accepted before comes back as a duplicate and is delivered once"}})
	case conflict:
		writeJSON(w, http.StatusConflict, answerJSON{Events: results, Error: &errorJSON{Code: "conflict",
			Field: d.fields[at] + results[at].Error.Field, Message: eventName(d, at) + results[at].Error.Message}})
	}
}

// eventsIf is results for a batch, nil for a single event (whose error says it all).
func (d *decoded) eventsIf(results []eventResultJSON) []eventResultJSON {
	if d.batch {
		return results
	}
	return nil
}

// severity orders outcomes: the answer's status is the most severe one's.
func severity(o outcome) int {
	switch o {
	case invalid:
		return 4
	case internal:
		return 3
	case unavailable:
		return 2
	case conflict:
		return 1
	}
	return 0
}

// statusRecorder remembers the status written, for the metrics.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}
