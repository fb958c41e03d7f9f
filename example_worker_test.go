package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// Run makes the retries, in every replica. Here the receiver answers 503 to the first request, so the
// first attempt (made by Dispatch) leaves the delivery pending, and the worker's retry succeeds. To shut
// down, cancel Run's context: Run returns once the attempts in flight are recorded; then close the idle
// connections of the attempts' HTTP client.
func ExampleDispatcher_Run() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	var requests atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer receiver.Close()

	succeeded := make(chan struct{}, 1)
	d, err := webhooks.New(rdb, webhooks.Options{
		AllowPrivateNetworks: true,                                    // the receiver is on loopback, which the egress guard refuses by default
		RetrySchedule:        []time.Duration{100 * time.Millisecond}, // one retry, soon (the default starts at 5s)
		Hooks:                webhooks.Hooks{DeliverySucceeded: func(webhooks.Delivery) { succeeded <- struct{}{} }},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: receiver.URL, Events: []string{"pool.created"}}); err != nil {
		panic(err)
	}
	results, err := d.Dispatch(ctx, webhooks.Event{Type: "pool.created", ID: "pool-42"})
	if err != nil {
		panic(err)
	}
	fmt.Println("after Dispatch:", results[0].Delivery.Status, results[0].Delivery.LastStatusCode)

	// The worker, stopped by cancelling its context.
	workerCtx, stop := context.WithCancel(ctx)
	var worker sync.WaitGroup
	worker.Go(func() {
		if err := d.Run(workerCtx); err != nil {
			fmt.Println("worker:", err)
		}
	})

	<-succeeded
	stop()
	worker.Wait()            // Run has returned: no attempt is in flight
	d.CloseIdleConnections() // the Redis client is the caller's to close

	dl, err := d.Deliveries().Get(ctx, results[0].Delivery.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println("after the retry:", dl.Status, "attempts:", dl.Attempts)
	// Output:
	// after Dispatch: pending 503
	// after the retry: success attempts: 2
}

// A delivery whose retries ran out is failed, and dispatching its event again does not re-send it.
// Redeliver does: it gives the delivery the whole retry schedule again, keeps its id (the webhook-id
// header) and history, and makes the first attempt before it returns.
func ExampleDispatcher_Redeliver() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	var down atomic.Bool
	down.Store(true)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer receiver.Close()

	d, err := webhooks.New(rdb, webhooks.Options{
		AllowPrivateNetworks: true,              // the receiver is on loopback, which the egress guard refuses by default
		RetrySchedule:        []time.Duration{}, // no retries: a failed first attempt fails the delivery
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: receiver.URL, Events: []string{"pool.created"}}); err != nil {
		panic(err)
	}
	evt := webhooks.Event{Type: "pool.created", ID: "pool-42"}
	for range 2 {
		results, err := d.Dispatch(ctx, evt)
		if err != nil {
			panic(err)
		}
		fmt.Println("dispatch:", results[0].Delivery.Status, "duplicate:", results[0].Duplicate)
	}

	down.Store(false) // the subscriber is back
	results, _ := d.Dispatch(ctx, evt)
	dl, err := d.Redeliver(ctx, results[0].Delivery.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println("redeliver:", dl.Status, "attempts:", dl.Attempts)
	// Output:
	// dispatch: failed duplicate: false
	// dispatch: failed duplicate: true
	// redeliver: success attempts: 2
}

// Recover redelivers a webhook's failed deliveries created in a time window, for an operator whose
// subscriber was down. A second call finds nothing left to re-send.
func ExampleDispatcher_Recover() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	var down atomic.Bool
	down.Store(true)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer receiver.Close()

	d, err := webhooks.New(rdb, webhooks.Options{
		AllowPrivateNetworks: true,              // the receiver is on loopback, which the egress guard refuses by default
		RetrySchedule:        []time.Duration{}, // no retries: a failed first attempt fails the delivery
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: receiver.URL, Events: []string{"pool.*"}})
	if err != nil {
		panic(err)
	}
	since := time.Now().Add(-time.Minute)
	for _, id := range []string{"pool-1", "pool-2", "pool-3"} {
		if _, err := d.Dispatch(ctx, webhooks.Event{Type: "pool.created", ID: id}); err != nil {
			panic(err)
		}
	}

	down.Store(false)
	for range 2 {
		n, err := d.Recover(ctx, w.ID, since, time.Time{}, 0) // until zero: now; limit 0: DefaultRecoverLimit
		if err != nil {
			panic(err)
		}
		fmt.Println("redelivered:", n)
	}
	// Output:
	// redelivered: 3
	// redelivered: 0
}
