package webhooks

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// benchSchema is a typical event type's schema: 10 properties of every common kind (strings with
// formats, a pattern and an enum, numbers with bounds, an array of strings, a nested object), 7 of
// them required.
const benchSchema = `{
	"type": "object",
	"required": ["id", "customer_id", "email", "amount", "currency", "status", "created_at"],
	"properties": {
		"id": {"type": "string", "pattern": "^ord_[a-z0-9]+$"},
		"customer_id": {"type": "string", "minLength": 4, "maxLength": 64},
		"email": {"type": "string", "format": "email"},
		"amount": {"type": "integer", "minimum": 0},
		"currency": {"type": "string", "enum": ["EUR", "USD", "GBP"]},
		"status": {"type": "string", "enum": ["pending", "paid", "refunded"]},
		"created_at": {"type": "string", "format": "date-time"},
		"tags": {"type": "array", "items": {"type": "string"}, "maxItems": 20},
		"shipping": {"type": "object", "required": ["line1", "city", "country"],
			"properties": {"line1": {"type": "string"}, "city": {"type": "string"}, "postcode": {"type": "string"},
				"country": {"type": "string", "pattern": "^[A-Z]{2}$"}}},
		"note": {"type": "string", "maxLength": 2000}
	}
}`

// benchSchemaData is about 1 KB of data that satisfies benchSchema.
func benchSchemaData() json.RawMessage {
	return json.RawMessage(`{"id": "ord_8f14e45fceea167a", "customer_id": "cus_c9f0f895fb98ab91", "email": "ada@example.com",
		"amount": 12999, "currency": "EUR", "status": "paid", "created_at": "2026-12-04T22:55:00Z",
		"tags": ["priority", "gift", "eu", "repeat-customer"],
		"shipping": {"line1": "12 Analytical Engine Street", "city": "London", "postcode": "EC1A 1BB", "country": "GB"},
		"note": "` + strings.Repeat("Leave the parcel with the concierge. ", 17) + `"}`)
}

// BenchmarkDispatchSchema: one op is a duplicate Dispatch (1 caller, 4 webhooks: its claim alone, the
// cheapest Dispatch there is) of about 1 KB of data, of a type with no entry in the catalog
// (schema=none) and of a type whose 10-property schema the data is validated against (schema=10props).
// The difference is what validation costs per event. BenchmarkEventTypeValidate measures the
// validation alone.
func BenchmarkDispatchSchema(b *testing.B) {
	for _, typed := range []bool{false, true} {
		name := "schema=none"
		if typed {
			name = "schema=10props"
		}
		b.Run(name, func(b *testing.B) {
			e := newBenchEnv(b, 4, Options{})
			ctx := context.Background()
			if typed {
				if _, err := e.d.EventTypes().Create(ctx, EventType{Name: "pool.created", Schema: json.RawMessage(benchSchema),
					Examples: []json.RawMessage{benchSchemaData()}}); err != nil {
					b.Fatal(err)
				}
			}
			data := benchSchemaData()
			const distinct = 100
			for i := range distinct {
				if _, err := e.d.Dispatch(ctx, Event{Type: "pool.created", ID: "evt-" + strconv.Itoa(i), Data: data}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				res, err := e.d.Dispatch(ctx, Event{Type: "pool.created", ID: "evt-" + strconv.Itoa(i%distinct), Data: data})
				if err != nil || len(res) != 4 || !res[0].Duplicate {
					b.Fatalf("dispatch %d: %v", i, err)
				}
			}
		})
	}
}

// BenchmarkEventTypeValidate: one op is the check Dispatch makes of an event's encoded body against
// its type's compiled 10-property schema (from the cached catalog: no I/O), about 1 KB of data.
func BenchmarkEventTypeValidate(b *testing.B) {
	tr := newTestRedis(b)
	d := newTestDispatcher(b, tr, Options{})
	ctx := context.Background()
	if _, err := d.EventTypes().Create(ctx, EventType{Name: "pool.created", Schema: json.RawMessage(benchSchema)}); err != nil {
		b.Fatal(err)
	}
	body, err := d.events.Encode(Event{Type: "pool.created", ID: "evt-1", Data: benchSchemaData()})
	if err != nil {
		b.Fatal(err)
	}
	if err := d.events.CheckType(ctx, "evt-1", "pool.created", body, true); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := d.events.CheckType(ctx, "evt-1", "pool.created", body, true); err != nil {
			b.Fatal(err)
		}
	}
}
