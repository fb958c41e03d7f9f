package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// paymentSchema is the schema of the tests' payment.created type.
const paymentSchema = `{
	"type": "object",
	"required": ["amount", "currency"],
	"properties": {
		"amount": {"type": "number", "minimum": 0},
		"currency": {"type": "string", "enum": ["EUR", "USD"]},
		"items": {"type": "array", "items": {"type": "object", "required": ["sku"]}}
	}
}`

// nonRegistryKeys are the keys of the test's prefix beyond the registry's: what a claim, a delivery or
// a stored event writes.
func nonRegistryKeys(t *testing.T, tr *testRedis) []string {
	var out []string
	for _, k := range tr.keys(t) {
		if !strings.Contains(k, ":registry}") {
			out = append(out, k)
		}
	}
	return out
}

// TestEventTypeSchemaIsEnforced: Dispatch and Enqueue deliver an event whose data satisfies its type's
// schema, and refuse one whose data fails it with ErrInvalidEvent naming the failing instance path and
// keyword, before anything is claimed (no key but the registry's, nothing received); ValidateEvent
// refuses it with the same error. Broken by skipping CheckType in events.Encoder.Check (the invalid
// events are delivered), or by validating after the claim (keys appear).
func TestEventTypeSchemaIsEnforced(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{ReplayIndex: true}) // even an event no webhook takes is stored
	rc := newReceiver(t)
	ctx := context.Background()
	_, err := d.EventTypes().Create(ctx, EventType{Name: "payment.created", Schema: json.RawMessage(paymentSchema),
		Examples: []json.RawMessage{json.RawMessage(`{"amount": 12.5, "currency": "EUR"}`)}})
	require.NoError(t, err)
	mustCreate(t, d, rc, "payment.*")

	invalid := []struct {
		name, data, path, keyword string
	}{
		{"wrong type", `{"amount": "12", "currency": "EUR"}`, "/amount", "type"},
		{"missing property", `{"currency": "EUR"}`, "/", "required"},
		{"not in enum", `{"amount": 1, "currency": "GBP"}`, "/currency", "enum"},
		{"below minimum", `{"amount": -1, "currency": "USD"}`, "/amount", "minimum"},
		{"nested", `{"amount": 1, "currency": "USD", "items": [{"sku": "a"}, {"qty": 2}]}`, "/items/1", "required"},
		{"not an object", `[1, 2]`, "/", "type"},
	}
	for _, c := range invalid {
		t.Run(c.name, func(t *testing.T) {
			evt := Event{Type: "payment.created", ID: "inv-" + nonWord.ReplaceAllString(c.name, "-"), Data: json.RawMessage(c.data)}
			verr := d.ValidateEvent(ctx, evt)
			require.ErrorIs(t, verr, ErrInvalidEvent)
			assert.Contains(t, verr.Error(), "at "+c.path+": keyword "+c.keyword+":", "names the failing path and keyword")
			for _, call := range []func(context.Context, Event) ([]Result, error){d.Dispatch, d.Enqueue} {
				res, err := call(ctx, evt)
				require.ErrorIs(t, err, ErrInvalidEvent)
				assert.NotErrorIs(t, err, ErrNotAccepted)
				assert.Equal(t, verr.Error(), err.Error(), "the same error as ValidateEvent")
				assert.Empty(t, res)
			}
		})
	}
	assert.Empty(t, nonRegistryKeys(t, tr), "nothing claimed or stored for a refused event")
	assert.Zero(t, rc.count(), "nothing sent for a refused event")
	_, err = d.Deliveries().Get(ctx, d.keys.DeliveryID(mustList(t, d)[0].ID, "inv-wrong-type"))
	assert.ErrorIs(t, err, ErrNotFound, "no delivery record")

	// Valid data is delivered, by Dispatch and by Enqueue (whose worker runs here as ProcessDue).
	res, err := d.Dispatch(ctx, Event{Type: "payment.created", ID: "ok-1", Data: map[string]any{"amount": 3, "currency": "USD"}})
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, StatusSuccess, res[0].Delivery.Status)
	_, err = d.Enqueue(ctx, Event{Type: "payment.created", ID: "ok-2", Data: json.RawMessage(`{"amount": 0, "currency": "EUR", "items": [{"sku": "x"}]}`)})
	require.NoError(t, err)
	runUntil(t, d, func() bool { return rc.count() == 2 })
	// A type with no entry in the catalog is not checked.
	_, err = d.Dispatch(ctx, Event{Type: "payment.refunded", ID: "ok-3", Data: "anything"})
	require.NoError(t, err)
	assert.Equal(t, 3, rc.count())
}

// TestEventTypeRepo: Create, Get, List (by name), Update and Delete; a name taken, a malformed or
// reserved name, a schema that does not compile, an example that fails its schema (at Create and at
// Update) are refused with nothing stored. Broken by dropping the examples' check in check (the
// failing example is stored).
func TestEventTypeRepo(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	ctx := context.Background()
	repo := d.EventTypes()
	created, err := repo.Create(ctx, EventType{Name: "pool.created", Description: "A pool was created.",
		Schema: json.RawMessage(`{"type": "object", "required": ["id"]}`), Examples: []json.RawMessage{json.RawMessage(`{"id": "p1"}`)}})
	require.NoError(t, err)
	assert.Equal(t, "pool.created", created.Name)
	_, err = repo.Create(ctx, EventType{Name: "a.deprecated", Deprecated: true})
	require.NoError(t, err)

	refused := []struct {
		name  string
		et    EventType
		field string
		is    error
	}{
		{"taken", EventType{Name: "pool.created"}, "", ErrEventTypeExists},
		{"bad name", EventType{Name: "pool..x"}, "name", ErrInvalidEventType},
		{"reserved name", EventType{Name: "openapi.json"}, "name", ErrInvalidEventType},
		{"schema not JSON", EventType{Name: "x.y", Schema: json.RawMessage(`{`)}, "schema", ErrInvalidEventType},
		{"schema invalid", EventType{Name: "x.y", Schema: json.RawMessage(`{"type": 12}`)}, "schema", ErrInvalidEventType},
		{"example fails", EventType{Name: "x.y", Schema: json.RawMessage(`{"type": "object", "required": ["id"]}`),
			Examples: []json.RawMessage{json.RawMessage(`{"id": 1}`), json.RawMessage(`{"name": "n"}`)}}, "examples", ErrInvalidEventType},
		{"example not JSON", EventType{Name: "x.y", Examples: []json.RawMessage{json.RawMessage(`{`)}}, "examples", ErrInvalidEventType},
		{"too many examples", EventType{Name: "x.y", Examples: make([]json.RawMessage, MaxEventTypeExamples+1)}, "examples", ErrInvalidEventType},
		{"description", EventType{Name: "x.y", Description: "a\x00b"}, "description", ErrInvalidEventType},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			_, err := repo.Create(ctx, c.et)
			require.ErrorIs(t, err, c.is)
			if c.field != "" {
				var f interface{ Field() string }
				require.ErrorAs(t, err, &f)
				assert.Equal(t, c.field, f.Field())
			}
		})
	}
	_, err = repo.Get(ctx, "x.y")
	assert.ErrorIs(t, err, ErrNotFound, "nothing stored for a refused type")
	assert.Contains(t, func() string { _, err := repo.Create(ctx, refused[5].et); return err.Error() }(),
		"example 1: at /: keyword required:", "the failing example, path and keyword")

	got, err := repo.Get(ctx, "pool.created")
	require.NoError(t, err)
	assert.Equal(t, "A pool was created.", got.Description)
	assert.JSONEq(t, `{"type": "object", "required": ["id"]}`, string(got.Schema))
	list, err := repo.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "a.deprecated", list[0].Name)
	assert.True(t, list[0].Deprecated)

	// Update: an example failing the new schema is refused, the type unchanged.
	got.Schema = json.RawMessage(`{"type": "object", "required": ["id", "size"]}`)
	_, err = repo.Update(ctx, *got)
	require.ErrorIs(t, err, ErrInvalidEventType)
	again, err := repo.Get(ctx, "pool.created")
	require.NoError(t, err)
	assert.JSONEq(t, `{"type": "object", "required": ["id"]}`, string(again.Schema))
	got.Examples = []json.RawMessage{json.RawMessage(`{"id": "p1", "size": 3}`)}
	_, err = repo.Update(ctx, *got)
	require.NoError(t, err)
	_, err = repo.Update(ctx, EventType{Name: "no.such"})
	assert.ErrorIs(t, err, ErrNotFound)

	require.NoError(t, repo.Delete(ctx, "pool.created"))
	assert.ErrorIs(t, repo.Delete(ctx, "pool.created"), ErrNotFound)
	_, err = repo.Get(ctx, "pool.created")
	assert.ErrorIs(t, err, ErrNotFound)
}

// TestEventTypeSchemaLoadsNoOtherDocument: a schema that refers to another document (a URL, a file, a
// relative name, a network path) or to a meta-schema the validator does not embed, or to the whole
// schema with "#", is refused at Create in words; references within the schema, and Draft 7 by its
// $schema, are accepted. Broken by dropping the reference checks of internal/schema's shape.resolve
// (issue 43's relative names and "#" are created, and fail every event).
func TestEventTypeSchemaLoadsNoOtherDocument(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	ctx := context.Background()
	dir := t.TempDir()
	other := dir + "/other.json"
	require.NoError(t, os.WriteFile(other, []byte(`{"type": "object"}`), 0o600))
	const remote = "may not refer to another document"
	for _, c := range []struct {
		name, schema string
		ok           bool
		words        string
	}{
		{"https", `{"$ref": "https://example.com/schema.json"}`, false, remote},
		{"file", `{"$ref": "file://` + other + `"}`, false, remote},
		{"relative", `{"$id": "file://` + dir + `/main.json", "$ref": "other.json"}`, false, remote},
		{"meta-schema", `{"$schema": "https://example.com/meta", "type": "object"}`, false, remote},
		// Issue 43, finding 5: these passed Create, then failed every event with "reference cycle".
		{"relative file", `{"$ref": "address.json"}`, false, remote},
		{"parent directory", `{"properties": {"a": {"$ref": "../common/a.json"}}}`, false, remote},
		{"network path", `{"$ref": "//schemas.example.com/x"}`, false, remote},
		{"whole schema", `{"$ref": "#"}`, false, `$ref "#" at the top of the schema: a reference to the whole schema is not supported; move the schema under $defs`},
		{"local", `{"$defs": {"id": {"type": "string"}}, "properties": {"id": {"$ref": "#/$defs/id"}}}`, true, ""},
		{"draft 7", `{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"id": {"type": "string"}},
			"properties": {"id": {"$ref": "#/definitions/id"}}}`, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := d.EventTypes().Create(ctx, EventType{Name: "ref." + nonWord.ReplaceAllString(c.name, "_"), Schema: json.RawMessage(c.schema)})
			if c.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidEventType)
			assert.Contains(t, err.Error(), c.words)
		})
	}
	// The Draft 7 type is enforced as Draft 7.
	_, err := d.Dispatch(ctx, Event{Type: "ref.draft_7", ID: "e1", Data: map[string]int{"id": 1}})
	require.ErrorIs(t, err, ErrInvalidEvent)
	assert.Contains(t, err.Error(), "at /id: keyword type:")
}

// TestRequireEventTypes: with Options.RequireEventTypes, an event of a type the catalog does not hold
// is refused with ErrInvalidEvent before anything is claimed; a registered type with no schema, and a
// deprecated one, are delivered; SendTest is not checked. Without it the unregistered type is
// delivered. Broken by ignoring the option in events.Encoder.CheckType.
func TestRequireEventTypes(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{RequireEventTypes: true})
	lax := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	ctx := context.Background()
	wh := mustCreate(t, d, rc, "*")
	_, err := d.EventTypes().Create(ctx, EventType{Name: "known.plain"})
	require.NoError(t, err)
	_, err = d.EventTypes().Create(ctx, EventType{Name: "known.old", Deprecated: true, Schema: json.RawMessage(`{"type": "object"}`)})
	require.NoError(t, err)

	_, err = d.Dispatch(ctx, Event{Type: "unknown.type", ID: "e1"})
	require.ErrorIs(t, err, ErrInvalidEvent)
	assert.Contains(t, err.Error(), "not in the catalog")
	require.ErrorIs(t, d.ValidateEvent(ctx, Event{Type: "unknown.type", ID: "e1"}), ErrInvalidEvent)
	assert.Empty(t, nonRegistryKeys(t, tr))
	assert.Zero(t, rc.count())
	for _, typ := range []string{"known.plain", "known.old"} {
		res, err := d.Dispatch(ctx, Event{Type: typ, ID: "e-" + typ, Data: map[string]int{"n": 1}})
		require.NoError(t, err, typ)
		require.Len(t, res, 1)
		assert.Equal(t, StatusSuccess, res[0].Delivery.Status, typ)
	}
	_, err = d.SendTest(ctx, wh.ID)
	require.NoError(t, err, "the library's own webhook.test is not held to the catalog")
	_, err = lax.Dispatch(ctx, Event{Type: "unknown.type", ID: "e2"})
	require.NoError(t, err, "without RequireEventTypes an unregistered type is delivered")
	assert.Equal(t, 4, rc.count())
}

// TestEventTypeChangesTakeEffect: a schema changed (or deleted) by a Dispatcher is enforced by that
// Dispatcher's next Dispatch, and by another Dispatcher on the same Redis once eventTypeCacheTTL has
// passed on its clock (it may use its copy until then). Each Dispatcher's clock is the test's, so a
// loaded machine's pauses move neither. Broken by not invalidating the cache in save (the writer keeps
// the old schema), or by never reading the catalog again after the first read (the other Dispatcher
// never sees the change).
func TestEventTypeChangesTakeEffect(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d, dClock := newClockedDispatcher(t, tr, Options{})
	other, otherClock := newClockedDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	ctx := context.Background()
	mustCreate(t, d, rc, "order.*")
	strict := json.RawMessage(`{"type": "object", "required": ["id"]}`)
	_, err := d.EventTypes().Create(ctx, EventType{Name: "order.placed", Schema: strict})
	require.NoError(t, err)
	bad := func(n int) Event {
		return Event{Type: "order.placed", ID: "bad-" + string(rune('a'+n)), Data: map[string]int{"n": 1}}
	}
	// check holds an event to x's catalog as Dispatch does: strictly, waiting for Redis as long as
	// the call may (ValidateEvent's lenient read gives up after 250 ms and keeps the copy it has).
	check := func(x *Dispatcher, e Event) error {
		_, err := x.events.Check(ctx, e, true)
		return err
	}
	for _, x := range []*Dispatcher{d, other} { // both read the catalog: each holds a copy
		require.ErrorIs(t, check(x, bad(0)), ErrInvalidEvent)
	}

	_, err = d.EventTypes().Update(ctx, EventType{Name: "order.placed", Schema: json.RawMessage(`{"type": "object"}`)})
	require.NoError(t, err)
	require.NoError(t, check(d, bad(1)), "the writer enforces the new schema at once")
	otherClock.Advance(eventTypeCacheTTL)
	require.NoError(t, check(other, bad(2)), "another Dispatcher enforces the new schema once eventTypeCacheTTL has passed")

	_, err = other.EventTypes().Update(ctx, EventType{Name: "order.placed", Schema: strict})
	require.NoError(t, err)
	require.ErrorIs(t, check(other, bad(3)), ErrInvalidEvent, "the writer, again")
	dClock.Advance(eventTypeCacheTTL)
	require.ErrorIs(t, check(d, bad(4)), ErrInvalidEvent, "and the other")

	require.NoError(t, d.EventTypes().Delete(ctx, "order.placed"))
	res, err := d.Dispatch(ctx, bad(5))
	require.NoError(t, err, "a deleted type is no longer enforced")
	require.Len(t, res, 1)
}

// TestEventTypeCatalogCostsNoRoundTrip: once the catalog is cached, a duplicate Dispatch of a type
// with a schema costs the round trips of one without (1: the claim); an invalid one costs none. Broken
// by reading the catalog (or the type) from Redis per event.
func TestEventTypeCatalogCostsNoRoundTrip(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	rt := &roundTrips{}
	c.AddHook(rt)
	d := newTestDispatcherOn(t, c, tr, Options{})
	d.now = newTestClock().Now // held still: the subscribers and catalog cached below stay fresh however slow the machine
	rc := newReceiver(t)
	ctx := context.Background()
	mustCreate(t, d, rc, "payment.*")
	_, err := d.EventTypes().Create(ctx, EventType{Name: "payment.created", Schema: json.RawMessage(paymentSchema)})
	require.NoError(t, err)
	evt := Event{Type: "payment.created", ID: "p1", Data: map[string]any{"amount": 1, "currency": "EUR"}}
	_, err = d.Dispatch(ctx, evt)
	require.NoError(t, err)
	for _, typ := range []string{"payment.created", "payment.untyped"} {
		evt.Type, evt.ID = typ, "dup-"+typ
		// Warm: the pair claimed, the subscribers cached, and the scripts of a fresh call and of a
		// duplicate loaded on the event's node (a cluster's nodes load each script apart).
		for range 2 {
			_, err = d.Dispatch(ctx, evt)
			require.NoError(t, err)
		}
		rt.n.Store(0)
		res, err := d.Dispatch(ctx, evt)
		require.NoError(t, err)
		require.True(t, res[0].Duplicate)
		assert.Equal(t, int32(1), rt.n.Load(), "%s: a duplicate costs one round trip", typ)
	}
	rt.n.Store(0)
	_, err = d.Dispatch(ctx, Event{Type: "payment.created", ID: "p2", Data: map[string]any{"amount": "x"}})
	require.ErrorIs(t, err, ErrInvalidEvent)
	assert.Zero(t, rt.n.Load(), "an invalid event costs no round trip")
}

// TestEventTypeRoutes: the operator's API creates, lists, reads, patches and deletes event types
// (400 naming the field for a failing example, 404 for an unknown name, 409 for a name taken); the
// portal lists and reads them (with its token) but refuses to change them (405); both serve the
// catalog's OpenAPI document, whose webhooks hold each type with its schema as the envelope's data.
// Broken by leaving the write routes off operatorOnly (the portal's POST succeeds).
func TestEventTypeRoutes(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	h, portal := d.Handler(), d.Portal()
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	send := callWith
	rec := send(h, "POST", "/event-types", "", `{"name": "invoice.paid", "description": "An invoice was paid.",
		"schema": {"type": "object", "required": ["invoice_id"], "properties": {"invoice_id": {"type": "string"}}},
		"examples": [{"invoice_id": "in_1"}]}`)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	rec = send(h, "POST", "/event-types", "", `{"name": "invoice.paid"}`)
	assert.Equal(t, http.StatusConflict, rec.Code, rec.Body.String())
	rec = send(h, "POST", "/event-types", "", `{"name": "invoice.void", "schema": {"type": "object", "required": ["id"]}, "examples": [{}]}`)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Contains(t, rec.Body.String(), `"field":"examples"`)
	rec = send(h, "POST", "/event-types", "", `{"name": "invoice.void", "bogus": 1}`)
	assert.Equal(t, http.StatusBadRequest, rec.Code, "unknown fields are refused")
	rec = send(h, "PATCH", "/event-types/invoice.paid", "", `{"deprecated": true, "description": null}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.JSONEq(t, `{"name": "invoice.paid", "deprecated": true, "examples": [{"invoice_id": "in_1"}],
		"schema": {"type": "object", "required": ["invoice_id"], "properties": {"invoice_id": {"type": "string"}}}}`, rec.Body.String())
	assert.Equal(t, http.StatusNotFound, send(h, "PATCH", "/event-types/nope", "", `{}`).Code)

	for _, c := range []struct {
		name  string
		h     http.Handler
		token string
	}{{"handler", h, ""}, {"portal", portal, token}} {
		rec := send(c.h, "GET", "/event-types", c.token, "")
		require.Equal(t, http.StatusOK, rec.Code, c.name)
		assert.Contains(t, rec.Body.String(), `"name":"invoice.paid"`, c.name)
		assert.Equal(t, http.StatusOK, send(c.h, "GET", "/event-types/invoice.paid", c.token, "").Code, c.name)
		assert.Equal(t, http.StatusNotFound, send(c.h, "GET", "/event-types/nope", c.token, "").Code, c.name)
		rec = send(c.h, "GET", "/event-types/openapi.json", c.token, "")
		require.Equal(t, http.StatusOK, rec.Code, c.name)
		var doc struct {
			OpenAPI  string `json:"openapi"`
			Webhooks map[string]struct {
				Post struct {
					Deprecated  bool `json:"deprecated"`
					RequestBody struct {
						Content map[string]struct {
							Schema struct {
								Properties map[string]json.RawMessage `json:"properties"`
							} `json:"schema"`
						} `json:"content"`
					} `json:"requestBody"`
				} `json:"post"`
			} `json:"webhooks"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc), c.name)
		assert.Equal(t, "3.1.0", doc.OpenAPI)
		require.Contains(t, doc.Webhooks, "invoice.paid", c.name)
		post := doc.Webhooks["invoice.paid"].Post
		assert.True(t, post.Deprecated, c.name)
		assert.JSONEq(t, `{"$id": "urn:webhooks:event-type:invoice.paid", "type": "object", "required": ["invoice_id"],
			"properties": {"invoice_id": {"type": "string"}}}`, string(post.RequestBody.Content["application/json"].Schema.Properties["data"]),
			c.name+": the type's schema, a resource of its own")
	}
	for _, r := range []struct{ method, target, body string }{
		{"POST", "/event-types", `{"name": "portal.made"}`},
		{"PATCH", "/event-types/invoice.paid", `{"deprecated": false}`},
		{"DELETE", "/event-types/invoice.paid", ""},
	} {
		rec := send(portal, r.method, r.target, token, r.body)
		assert.Equal(t, http.StatusMethodNotAllowed, rec.Code, "the portal does not %s %s", r.method, r.target)
	}
	assert.Equal(t, http.StatusUnauthorized, send(portal, "GET", "/event-types", "", "").Code, "the portal needs its token")
	_, err = d.EventTypes().Get(context.Background(), "portal.made")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Equal(t, http.StatusNoContent, send(h, "DELETE", "/event-types/invoice.paid", "", "").Code)
	assert.Equal(t, http.StatusNotFound, send(h, "DELETE", "/event-types/invoice.paid", "", "").Code)
}
