package api

// The routes of the catalog of event types: the operator's to change, every tenant's to read; and the
// catalog as an OpenAPI 3.1 document whose webhooks are the types.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/smartdrop/webhooks/internal/types"
)

// catalogPattern is the route of the catalog's OpenAPI document; no event type may be named after it.
const catalogPattern = "GET /event-types/openapi.json"

func (rt *router) listEventTypes(w http.ResponseWriter, r *http.Request) {
	body, err := rt.b.EventTypesAnswer(r.Context(), "list", func(list []types.EventType) ([]byte, error) {
		return json.Marshal(eventTypeList{list})
	})
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

func (rt *router) getEventType(w http.ResponseWriter, r *http.Request) {
	out, err := rt.b.GetEventType(r.Context(), r.PathValue("name"))
	rt.answer(w, r, http.StatusOK, out, err)
}

func (rt *router) createEventType(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, false)
	var t types.EventType
	if err == nil {
		err = decodeEventType(body, &t)
	}
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	out, err := rt.b.CreateEventType(r.Context(), t)
	rt.answer(w, r, http.StatusCreated, out, err)
}

// patchEventType replaces the fields the patch holds (description, schema, examples, deprecated; null
// clears one) in one read-modify-write; a name, if given, must be the type's.
func (rt *router) patchEventType(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, false)
	var fields map[string]json.RawMessage
	if err == nil && (json.Unmarshal(body, &fields) != nil || fields == nil) {
		err = fmt.Errorf("%w: the body must be a JSON object", ErrBadRequest)
	}
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	name := r.PathValue("name")
	out, err := rt.b.PatchEventType(r.Context(), name, func(cur *types.EventType) error {
		return patchEventType(cur, name, fields)
	})
	rt.answer(w, r, http.StatusOK, out, err)
}

// patchEventType applies a PATCH's fields to cur, the type named name.
func patchEventType(cur *types.EventType, name string, fields map[string]json.RawMessage) error {
	merged, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(merged, &all); err != nil {
		return err
	}
	for k, v := range fields {
		if k == "name" && !types.IsJSONNull(v) {
			var n string
			if json.Unmarshal(v, &n) != nil || n != name {
				return fmt.Errorf("%w: name cannot be changed", ErrBadRequest)
			}
		}
		if types.IsJSONNull(v) {
			delete(all, k)
		} else {
			all[k] = v
		}
	}
	all["name"], _ = json.Marshal(name) // a string always encodes
	body, err := json.Marshal(all)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	next := types.EventType{}
	if err := decodeEventType(body, &next); err != nil {
		return err
	}
	*cur = next
	return nil
}

// decodeEventType decodes a request's event type: one JSON object of EventType's fields only.
func decodeEventType(body []byte, t *types.EventType) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(t); err != nil || dec.More() {
		return fmt.Errorf("%w: the body must be one JSON object of an event type's fields (name, description, schema, examples, deprecated)", ErrBadRequest)
	}
	return nil
}

func (rt *router) deleteEventType(w http.ResponseWriter, r *http.Request) {
	if err := rt.b.DeleteEventType(r.Context(), r.PathValue("name")); err != nil {
		rt.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// eventTypeList is the answer of GET /event-types.
type eventTypeList struct {
	EventTypes []types.EventType `json:"event_types"`
}

// catalogDocument serves the catalog as an OpenAPI 3.1 document (CatalogDocument).
func (rt *router) catalogDocument(w http.ResponseWriter, r *http.Request) {
	out, err := rt.b.EventTypesAnswer(r.Context(), "openapi", CatalogDocument)
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// The Standard Webhooks headers every request carries, as the catalog documents them.
var webhookHeaders = []map[string]any{
	{"name": "webhook-id", "in": "header", "required": true, "schema": map[string]any{"type": "string"},
		"description": "The delivery's id: the same on every attempt and redelivery of one (webhook, event) pair; dedup on it."},
	{"name": "webhook-timestamp", "in": "header", "required": true, "schema": map[string]any{"type": "string", "pattern": "^[0-9]+$"},
		"description": "When the request was signed, in Unix seconds; refuse one too far from now."},
	{"name": "webhook-signature", "in": "header", "required": true, "schema": map[string]any{"type": "string"},
		"description": "Space-separated signatures of \"<webhook-id>.<webhook-timestamp>.<body>\": v1,<base64 HMAC-SHA256> and/or v1a,<base64 ed25519>; several during a key rotation."},
}

// CatalogDocument is the catalog of event types as an OpenAPI 3.1 document: one entry of its top-level
// webhooks per type, a POST whose request body is the Standard Webhooks envelope {id, type,
// timestamp, data} with the type's schema as data (made a schema resource of its own with an $id, so
// that its local references resolve within it), the three signature headers, the type's examples as
// envelopes, and deprecated set for a deprecated type.
func CatalogDocument(list []types.EventType) ([]byte, error) {
	hooks := make(map[string]any, len(list))
	for _, t := range list {
		data, err := dataSchema(t)
		if err != nil {
			return nil, err
		}
		media := map[string]any{"schema": map[string]any{
			"type": "object", "required": []string{"id", "type", "timestamp", "data"},
			"properties": map[string]any{
				"id":        map[string]any{"type": "string", "description": "The event's id (the same for every webhook it is sent to)."},
				"type":      map[string]any{"const": t.Name},
				"timestamp": map[string]any{"type": "string", "format": "date-time"},
				"data":      data,
			},
		}}
		if len(t.Examples) > 0 {
			examples := map[string]any{}
			for i, ex := range t.Examples {
				examples["example"+strconv.Itoa(i+1)] = map[string]any{"value": map[string]any{
					"id": "evt_example_" + strconv.Itoa(i+1), "type": t.Name, "timestamp": "2026-01-01T00:00:00Z", "data": ex}}
			}
			media["examples"] = examples
		}
		op := map[string]any{
			"operationId": t.Name,
			"summary":     t.Name,
			"parameters":  webhookHeaders,
			"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": media}},
			"responses": map[string]any{
				"2XX":     map[string]any{"description": "Received: any 2xx answer ends the delivery."},
				"default": map[string]any{"description": "Any other answer (or none within the timeout) is retried on a schedule."},
			},
		}
		if t.Description != "" {
			op["description"] = t.Description
		}
		if t.Deprecated {
			op["deprecated"] = true
		}
		hooks[t.Name] = map[string]any{"post": op}
	}
	return json.Marshal(map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "Webhook events", "version": "1",
			"description": "The events this service sends to webhook endpoints, signed per Standard Webhooks (https://www.standardwebhooks.com)."},
		"webhooks": hooks,
	})
}

// dataSchema is a type's schema as the envelope's data: {} (anything) for none; an object schema
// without $id gets one, naming the type, so that "#/..." references resolve within it.
func dataSchema(t types.EventType) (any, error) {
	if len(t.Schema) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(t.Schema))
	dec.UseNumber() // numbers as written, not as float64
	var s any
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	if obj, ok := s.(map[string]any); ok {
		if _, has := obj["$id"]; !has {
			obj["$id"] = "urn:webhooks:event-type:" + t.Name
		}
	}
	return s, nil
}
