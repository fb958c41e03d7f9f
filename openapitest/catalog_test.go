package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
)

// catalogShape is the part of OpenAPI 3.1 a catalog document uses, as a JSON Schema (2020-12): the
// document's openapi and info, and under webhooks a Path Item per type whose only operation is a POST
// with the header parameters, a required JSON request body with a schema (and named examples, each
// with a value), and responses.
const catalogShape = `{
	"type": "object",
	"required": ["openapi", "info", "webhooks"],
	"additionalProperties": false,
	"properties": {
		"openapi": {"type": "string", "pattern": "^3\\.1\\.\\d+$"},
		"info": {"type": "object", "required": ["title", "version"],
			"properties": {"title": {"type": "string"}, "version": {"type": "string"}, "description": {"type": "string"}}},
		"webhooks": {"type": "object", "additionalProperties": {"$ref": "#/$defs/pathItem"}}
	},
	"$defs": {
		"pathItem": {"type": "object", "required": ["post"], "additionalProperties": false,
			"properties": {"post": {"$ref": "#/$defs/operation"}}},
		"operation": {"type": "object", "required": ["requestBody", "responses", "parameters"], "additionalProperties": false,
			"properties": {
				"operationId": {"type": "string"}, "summary": {"type": "string"}, "description": {"type": "string"},
				"deprecated": {"type": "boolean"},
				"parameters": {"type": "array", "items": {"$ref": "#/$defs/header"}},
				"requestBody": {"type": "object", "required": ["content"], "additionalProperties": false,
					"properties": {"required": {"const": true}, "description": {"type": "string"},
						"content": {"type": "object", "required": ["application/json"], "additionalProperties": false,
							"properties": {"application/json": {"$ref": "#/$defs/mediaType"}}}}},
				"responses": {"type": "object", "minProperties": 1,
					"propertyNames": {"pattern": "^([1-5][0-9X]{2}|default)$"},
					"additionalProperties": {"type": "object", "required": ["description"], "properties": {"description": {"type": "string"}}}}
			}},
		"header": {"type": "object", "required": ["name", "in", "schema"], "additionalProperties": false,
			"properties": {"name": {"type": "string"}, "in": {"const": "header"}, "required": {"type": "boolean"},
				"description": {"type": "string"}, "schema": {"type": ["object", "boolean"]}}},
		"mediaType": {"type": "object", "required": ["schema"], "additionalProperties": false,
			"properties": {"schema": {"type": ["object", "boolean"]},
				"examples": {"type": "object", "additionalProperties": {"type": "object", "required": ["value"],
					"properties": {"value": true, "summary": {"type": "string"}}}}}}
	}
}`

// catalogTypes are the event types the test registers: a 2020-12 schema with a local $ref and a
// format, a Draft 7 one with definitions (deprecated), and one without a schema.
var catalogTypes = []webhooks.EventType{
	{Name: "order.placed", Description: "An order was placed.",
		Schema: json.RawMessage(`{"type": "object", "required": ["order_id", "placed_at", "lines"],
			"properties": {"order_id": {"type": "string"}, "placed_at": {"type": "string", "format": "date-time"},
				"lines": {"type": "array", "items": {"$ref": "#/$defs/line"}}},
			"$defs": {"line": {"type": "object", "required": ["sku", "qty"],
				"properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}}}}}`),
		Examples: []json.RawMessage{json.RawMessage(`{"order_id": "o1", "placed_at": "2026-01-02T03:04:05Z", "lines": [{"sku": "a", "qty": 2}]}`)}},
	{Name: "legacy.synced", Deprecated: true,
		Schema: json.RawMessage(`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
			"definitions": {"id": {"type": "string", "minLength": 2}}, "required": ["id"], "properties": {"id": {"$ref": "#/definitions/id"}}}`),
		Examples: []json.RawMessage{json.RawMessage(`{"id": "ab"}`)}},
	{Name: "ping"},
}

// TestCatalogDocumentValidates: the catalog's OpenAPI document, served by Handler and (with a token)
// Portal, has the shape of an OpenAPI 3.1 webhooks document (catalogShape); each type's request body
// schema compiles with the same validator the answers are checked with (formats asserted), every
// request the library really sent for the type, and every published example, satisfy it, and data
// that fails the type's schema fails it; each documented header is on every real request.
func TestCatalogDocumentValidates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	got := map[string][]*http.Request{}
	bodies := map[*http.Request][]byte{}
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var env struct{ Type string }
		_ = json.Unmarshal(b, &env)
		mu.Lock()
		got[env.Type] = append(got[env.Type], r)
		bodies[r] = b
		mu.Unlock()
	}))
	t.Cleanup(rc.Close)
	d := newDispatcher(t)
	for _, et := range catalogTypes {
		_, err := d.EventTypes().Create(ctx, et)
		require.NoError(t, err, et.Name)
	}
	_, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: rc.URL + "/ok", Events: []string{"*"}})
	require.NoError(t, err)
	for i, evt := range []webhooks.Event{
		{Type: "order.placed", Data: json.RawMessage(`{"order_id": "o9", "placed_at": "2026-03-04T05:06:07.5+01:00", "lines": [{"sku": "x", "qty": 1}]}`)},
		{Type: "legacy.synced", Data: map[string]string{"id": "xyz"}},
		{Type: "ping", Data: []int{1, 2}},
		{Type: "ping"},
	} {
		evt.ID = "evt-" + string(rune('a'+i))
		_, err := d.Dispatch(ctx, evt)
		require.NoError(t, err, evt.Type)
	}

	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	var docs [][]byte
	for _, c := range []struct {
		h     http.Handler
		token string
	}{{d.Handler(), ""}, {d.Portal(), token}} {
		req := httptest.NewRequest("GET", "/event-types/openapi.json", nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		docs = append(docs, rec.Body.Bytes())
	}
	require.JSONEq(t, string(docs[0]), string(docs[1]), "the portal serves the operator's catalog")

	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(docs[0]))
	require.NoError(t, err)
	shape, err := jsonschema.UnmarshalJSON(strings.NewReader(catalogShape))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	require.NoError(t, c.AddResource("file:///catalog-shape.json", shape))
	require.NoError(t, c.AddResource("file:///catalog.json", doc))
	sch, err := c.Compile("file:///catalog-shape.json")
	require.NoError(t, err)
	require.NoError(t, sch.Validate(doc), "the document has the shape of an OpenAPI 3.1 webhooks document")

	hooks := doc.(map[string]any)["webhooks"].(map[string]any)
	require.Len(t, hooks, len(catalogTypes))
	for _, et := range catalogTypes {
		post := hooks[et.Name].(map[string]any)["post"].(map[string]any)
		assert.Equal(t, et.Deprecated, post["deprecated"] == true, et.Name)
		loc := "file:///catalog.json#/webhooks/" + pointer(et.Name) + "/post/requestBody/content/application~1json/schema"
		body, err := c.Compile(loc)
		require.NoError(t, err, loc)
		mu.Lock()
		reqs := got[et.Name]
		mu.Unlock()
		require.NotEmpty(t, reqs, et.Name)
		for _, r := range reqs {
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(bodies[r]))
			require.NoError(t, err)
			assert.NoError(t, body.Validate(inst), "%s: the request sent, %s", et.Name, bodies[r])
			for _, p := range post["parameters"].([]any) {
				name := p.(map[string]any)["name"].(string)
				assert.NotEmpty(t, r.Header.Get(name), "%s: documented header %s is sent", et.Name, name)
			}
		}
		media := post["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)
		examples, _ := media["examples"].(map[string]any)
		assert.Len(t, examples, len(et.Examples), et.Name)
		for name, ex := range examples {
			assert.NoError(t, body.Validate(ex.(map[string]any)["value"]), "%s: example %s", et.Name, name)
		}
		if len(et.Schema) > 0 {
			bad, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"id": "x", "type": "` + et.Name + `", "timestamp": "2026-01-01T00:00:00Z", "data": {"id": 1}}`))
			require.NoError(t, err)
			assert.Error(t, body.Validate(bad), "%s: data failing the type's schema fails the document's", et.Name)
		}
		wrongType, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"id": "x", "type": "other", "timestamp": "2026-01-01T00:00:00Z", "data": null}`))
		require.NoError(t, err)
		assert.Error(t, body.Validate(wrongType), "%s: the envelope's type is the type's name", et.Name)
	}
}
