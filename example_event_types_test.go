package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// An event type with a JSON Schema: Dispatch (and Enqueue) refuse an event whose data fails it, with
// ErrInvalidEvent naming the failing path and keyword, before anything is claimed or sent.
func ExampleEventTypeRepo_Create() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	receiver := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer receiver.Close()
	d, err := webhooks.New(rdb, webhooks.Options{AllowPrivateNetworks: true}) // the receiver is on loopback
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: receiver.URL, Events: []string{"invoice.*"}}); err != nil {
		panic(err)
	}

	_, err = d.EventTypes().Create(ctx, webhooks.EventType{
		Name:        "invoice.paid",
		Description: "An invoice was paid in full.",
		Schema: json.RawMessage(`{"type": "object", "required": ["invoice_id", "amount"],
			"properties": {"invoice_id": {"type": "string"}, "amount": {"type": "integer", "minimum": 0}}}`),
		Examples: []json.RawMessage{json.RawMessage(`{"invoice_id": "in_1", "amount": 4200}`)}, // each must pass the schema
	})
	if err != nil {
		panic(err)
	}

	_, err = d.Dispatch(ctx, webhooks.Event{Type: "invoice.paid", ID: "in_1", Data: map[string]any{"invoice_id": "in_1", "amount": "42"}})
	fmt.Println(errors.Is(err, webhooks.ErrInvalidEvent), err)
	res, err := d.Dispatch(ctx, webhooks.Event{Type: "invoice.paid", ID: "in_1", Data: map[string]any{"invoice_id": "in_1", "amount": 4200}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res[0].Delivery.Status)
	d.CloseIdleConnections()
	// Output:
	// true webhooks: invalid event: data of invoice.paid fails its schema at /amount: keyword type: got string, want integer
	// success
}
