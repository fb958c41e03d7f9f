package otelwebhooks_test

import (
	"context"
	"log"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/otelwebhooks"
)

// Instrument a Dispatcher with the global tracer and meter providers (set them up with the
// OpenTelemetry SDK first), and report its backlog in the gauges.
func Example() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})

	tel, err := otelwebhooks.New() // or WithTracerProvider / WithMeterProvider
	if err != nil {
		log.Fatal(err)
	}
	d, err := webhooks.New(rdb, tel.Instrument(webhooks.Options{}))
	if err != nil {
		log.Fatal(err)
	}
	if err := tel.Observe(d); err != nil {
		log.Fatal(err)
	}
	// Dispatch and Enqueue now start spans; each delivery keeps the caller's trace context, so every
	// attempt, whichever replica makes it, is a span in the caller's trace.
	_, _ = d.Dispatch(context.Background(), webhooks.Event{ID: "evt_1", Type: "order.paid"})
	// Output:
}
