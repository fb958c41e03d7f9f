package webhooks

// The admin API's routes of the catalog of event types (GET/POST /event-types, GET/PATCH/DELETE
// /event-types/{name}, GET /event-types/openapi.json): the operator changes the catalog, the portal
// reads it. An event type travels as the JSON of EventType.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// decodeEventType decodes a request's event type: one JSON object of EventType's fields only.
func decodeEventType(body []byte, t *EventType) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(t); err != nil || dec.More() {
		return fmt.Errorf("%w: the body must be one JSON object of an event type's fields (name, description, schema, examples, deprecated)", errBadRequest)
	}
	return nil
}

func (b adminBackend) ListEventTypes(ctx context.Context) ([]byte, error) {
	list, err := b.d.eventTypes.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]EventType, len(list))
	for i, t := range list {
		out[i] = *t
	}
	return encode(struct {
		EventTypes []EventType `json:"event_types"`
	}{out}, nil)
}

func (b adminBackend) GetEventType(ctx context.Context, name string) ([]byte, error) {
	return encode(b.d.eventTypes.Get(ctx, name))
}

func (b adminBackend) CreateEventType(ctx context.Context, body []byte) ([]byte, error) {
	var t EventType
	if err := decodeEventType(body, &t); err != nil {
		return nil, err
	}
	return encode(b.d.eventTypes.Create(ctx, t))
}

// PatchEventType replaces the fields the patch holds (description, schema, examples, deprecated; null
// clears one) in one read-modify-write; a name, if given, must be the type's.
func (b adminBackend) PatchEventType(ctx context.Context, name string, patch []byte) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(patch, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("%w: the body must be a JSON object", errBadRequest)
	}
	return encode(b.d.eventTypes.modify(ctx, name, func(cur *EventType) error {
		merged, err := json.Marshal(cur)
		if err != nil {
			return err
		}
		var all map[string]json.RawMessage
		if err := json.Unmarshal(merged, &all); err != nil {
			return err
		}
		for k, v := range fields {
			if k == "name" && !isJSONNull(v) {
				var n string
				if json.Unmarshal(v, &n) != nil || n != name {
					return fmt.Errorf("%w: name cannot be changed", errBadRequest)
				}
			}
			if isJSONNull(v) {
				delete(all, k)
			} else {
				all[k] = v
			}
		}
		all["name"], _ = json.Marshal(name) // a string always encodes
		body, err := json.Marshal(all)
		if err != nil {
			return fmt.Errorf("%w: %w", errBadRequest, err)
		}
		next := EventType{}
		if err := decodeEventType(body, &next); err != nil {
			return err
		}
		*cur = next
		return nil
	}))
}

func (b adminBackend) DeleteEventType(ctx context.Context, name string) error {
	return b.d.eventTypes.Delete(ctx, name)
}
