package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// Hooks feed metrics: here plain counters, in practice Prometheus or OpenTelemetry instruments (the
// library depends on neither). Hooks run after each outcome is recorded, on the goroutine that made
// the attempt, so Dispatch has run them by the time it returns.
func ExampleHooks() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ok.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer broken.Close()

	var (
		mu       sync.Mutex
		attempts = map[string]int{} // by status code
		failed   int
	)
	d, err := webhooks.New(rdb, webhooks.Options{
		AllowPrivateNetworks: true,              // the receivers are on loopback, which the egress guard refuses by default
		RetrySchedule:        []time.Duration{}, // no retries: a failed first attempt fails the delivery
		Hooks: webhooks.Hooks{
			AttemptFinished: func(a webhooks.AttemptInfo) {
				mu.Lock()
				defer mu.Unlock()
				attempts[strconv.Itoa(a.StatusCode)]++ // a.Duration for a latency histogram
			},
			DeliveryFailed: func(webhooks.Delivery) {
				mu.Lock()
				defer mu.Unlock()
				failed++
			},
		},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, url := range []string{ok.URL, broken.URL} {
		if _, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: url, Events: []string{"pool.*"}}); err != nil {
			panic(err)
		}
	}
	if _, err := d.Dispatch(ctx, webhooks.Event{Type: "pool.created", ID: "pool-42"}); err != nil {
		panic(err)
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Println("attempts: 200:", attempts["200"], "500:", attempts["500"])
	fmt.Println("deliveries failed:", failed)
	// Output:
	// attempts: 200: 1 500: 1
	// deliveries failed: 1
}

// The egress guard refuses loopback, private and other non-public addresses by default, both in a
// webhook's URL and at connect time. AllowedNetworks lets chosen ranges through (in production, say,
// 10.20.0.0/16 for internal subscribers); AllowPrivateNetworks would turn the guard off entirely.
func ExampleOptions_allowedNetworks() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer receiver.Close() // on 127.0.0.1
	ctx := context.Background()

	guarded, err := webhooks.New(rdb, webhooks.Options{KeyPrefix: "guarded"})
	if err != nil {
		panic(err)
	}
	_, err = guarded.Webhooks().Create(ctx, webhooks.Webhook{URL: receiver.URL, Events: []string{"pool.*"}})
	fmt.Println("default options, blocked:", errors.Is(err, webhooks.ErrBlockedAddress))

	d, err := webhooks.New(rdb, webhooks.Options{
		AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	})
	if err != nil {
		panic(err)
	}
	if _, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: receiver.URL, Events: []string{"pool.*"}}); err != nil {
		panic(err)
	}
	results, err := d.Dispatch(ctx, webhooks.Event{Type: "pool.created", ID: "pool-42"})
	if err != nil {
		panic(err)
	}
	fmt.Println("allowed:", results[0].Delivery.Status)
	// Output:
	// default options, blocked: true
	// allowed: success
}
