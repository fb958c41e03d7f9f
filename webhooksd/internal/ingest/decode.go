package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/smartdrop/webhooks"
)

// MaxBatch bounds the events of one request.
const MaxBatch = 100

// envelopeBytes is what an event's JSON may hold beyond its data: id, type, tenant, order key, time
// and their names (each at most 256 bytes), and the whitespace around them.
const envelopeBytes = 4 << 10

// eventJSON is one event as a request carries it.
type eventJSON struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Tenant   string          `json:"tenant"`
	OrderKey string          `json:"order_key"`
	Time     string          `json:"time"`
	Data     json.RawMessage `json:"data"`
}

// requestJSON is a request's body: one event, or {"events": [...]}.
type requestJSON struct {
	eventJSON
	Events *[]json.RawMessage `json:"events"`
}

// requestError is a request refused before any event is enqueued: a 400 or 413 naming the field.
type requestError struct {
	status  int
	code    string
	field   string
	message string
}

func (e *requestError) Error() string { return e.message }

func badRequest(field, format string, args ...any) *requestError {
	return &requestError{status: 400, code: "invalid_request", field: field, message: fmt.Sprintf(format, args...)}
}

func tooLarge(field, format string, args ...any) *requestError {
	return &requestError{status: 413, code: "too_large", field: field, message: fmt.Sprintf(format, args...)}
}

// decoded is a request's events, with the field prefix each one's errors name ("" for a single
// event, "events[3]." in a batch).
type decoded struct {
	events []webhooks.Event
	fields []string
	batch  bool
}

// decode parses a request body into its events, checking what the JSON alone tells: its shape, the
// fields' types, the required id and type, the time's format, the batch's and each event's size.
func decode(body []byte, maxPayload int) (*decoded, *requestError) {
	var req requestJSON
	if err := strictUnmarshal(body, &req); err != nil {
		return nil, jsonError("", err)
	}
	if req.Events == nil {
		evt, rerr := toEvent(req.eventJSON, "", len(body), maxPayload)
		if rerr != nil {
			return nil, rerr
		}
		return &decoded{events: []webhooks.Event{evt}, fields: []string{""}}, nil
	}
	if req.ID != "" || req.Type != "" || req.Tenant != "" || req.OrderKey != "" || req.Time != "" || req.Data != nil {
		return nil, badRequest("events", "a batch is {\"events\": [...]} and nothing else: put id, type and data in each event")
	}
	raws := *req.Events
	switch {
	case len(raws) == 0:
		return nil, badRequest("events", "events is empty: send 1 to %d events", MaxBatch)
	case len(raws) > MaxBatch:
		return nil, tooLarge("events", "%d events in one request: send at most %d, in several requests", len(raws), MaxBatch)
	}
	d := &decoded{events: make([]webhooks.Event, len(raws)), fields: make([]string, len(raws)), batch: true}
	for i, raw := range raws {
		prefix := "events[" + strconv.Itoa(i) + "]."
		var e eventJSON
		if err := strictUnmarshal(raw, &e); err != nil {
			return nil, jsonError(prefix, err)
		}
		evt, rerr := toEvent(e, prefix, len(raw), maxPayload)
		if rerr != nil {
			return nil, rerr
		}
		d.events[i], d.fields[i] = evt, prefix
	}
	return d, nil
}

// toEvent checks one event's fields and makes it a webhooks.Event; size is its JSON's length.
func toEvent(e eventJSON, prefix string, size, maxPayload int) (webhooks.Event, *requestError) {
	if len(e.Data) > maxPayload || size > maxPayload+envelopeBytes {
		return webhooks.Event{}, tooLarge(prefix+"data", "the event is %d bytes: an event's encoded body may be at most %d bytes "+
			"(the server's -max-payload-bytes): send less data, or a reference to it", size, maxPayload)
	}
	if e.ID == "" {
		return webhooks.Event{}, badRequest(prefix+"id", "id is required: the event's own id, which makes sending it again safe "+
			"(the same id is delivered once)")
	}
	if e.Type == "" {
		return webhooks.Event{}, badRequest(prefix+"type", "type is required: the event's type, like invoice.paid")
	}
	evt := webhooks.Event{ID: e.ID, Type: e.Type, Tenant: e.Tenant, OrderKey: e.OrderKey}
	if e.Data != nil {
		evt.Data = e.Data // json.RawMessage: taken as the JSON text it is
	}
	if e.Time != "" {
		t, err := time.Parse(time.RFC3339Nano, e.Time)
		if err != nil {
			return webhooks.Event{}, badRequest(prefix+"time", "time %q is not an RFC 3339 time: give one like 2026-01-02T15:04:05Z, "+
				"or leave it out for the time the server takes the event", e.Time)
		}
		evt.Time = t
	}
	return evt, nil
}

// strictUnmarshal decodes one JSON value into v, refusing unknown fields and anything after it.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errTrailing
	}
	return nil
}

var errTrailing = errors.New("trailing data")

// jsonError is the 400 of a body that does not decode, naming the field when the decoder does.
func jsonError(prefix string, err error) *requestError {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		field := strings.TrimPrefix(typeErr.Field, "eventJSON.") // the embedded struct of requestJSON
		want := "a string"
		switch field {
		case "events":
			want = "an array of events"
		case "data":
			want = "any JSON value"
		}
		if strings.HasPrefix(field, "events.") { // a batch whose events are not objects
			field, want = "events", "an array of event objects"
		}
		return badRequest(prefix+field, "%s must be %s, not a JSON %s", prefix+field, want, typeErr.Value)
	case errors.As(err, &typeErr) && prefix != "":
		return badRequest(strings.TrimSuffix(prefix, "."), "%s must be an event object, not a JSON %s", strings.TrimSuffix(prefix, "."), typeErr.Value)
	case errors.As(err, &typeErr):
		return badRequest("", "the body must be a JSON object: one event, or {\"events\": [...]}")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return badRequest(prefix+name, "unknown field %q: an event has id, type, tenant, order_key, time and data", prefix+name)
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return badRequest(strings.TrimSuffix(prefix, "."), "the body is not valid JSON (%s): send one event object, or {\"events\": [...]}",
			strings.TrimPrefix(err.Error(), "json: "))
	case errors.Is(err, errTrailing):
		return badRequest(strings.TrimSuffix(prefix, "."), "more JSON after the event: send one object per request, or a batch {\"events\": [...]}")
	}
	return badRequest(strings.TrimSuffix(prefix, "."), "the body does not decode: send one event object, or {\"events\": [...]}")
}
