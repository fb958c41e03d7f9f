package webhookstest_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/webhookstest"
)

// exampleRedis is the examples' Redis: an embedded miniredis (in a service's tests, its own Redis).
func exampleRedis() (redis.UniversalClient, func()) {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	return rdb, func() { _ = rdb.Close(); m.Close() }
}

// A service's integration test: dispatch through the library to a Receiver and check that the event
// arrived exactly once, signed with the webhook's secret. In a test, write rc := webhookstest.Start(t)
// and rc.ReceivedOnce(t, "order-1"); an Example has no testing.T, so it uses NewReceiver and Once.
func Example() {
	rdb, closeRedis := exampleRedis()
	defer closeRedis()
	ctx := context.Background()

	rc := webhookstest.NewReceiver()
	defer rc.Close()
	// AllowPrivateNetworks: the Receiver listens on loopback, which the egress guard refuses.
	d, err := webhooks.New(rdb, webhooks.Options{AllowPrivateNetworks: true})
	if err != nil {
		panic(err)
	}
	wh, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: rc.URL(), Events: []string{"order.*"}})
	if err != nil {
		panic(err)
	}
	rc.SetKeyOf(wh) // verify with the webhook's secret

	evt := webhooks.Event{Type: "order.paid", ID: "order-1", Data: map[string]int{"total": 12}}
	for range 2 { // the second Dispatch is a duplicate: nothing is sent
		if _, err := d.Dispatch(ctx, evt); err != nil {
			panic(err)
		}
	}
	req, err := rc.Once("order-1")
	fmt.Println("received exactly once:", err == nil)
	fmt.Println(req.Type, req.Verified, req.Status, string(req.Data))
	// Output:
	// received exactly once: true
	// order.paid true 200 {"total":12}
}

// A Receiver that fails the first two attempts of each delivery: the worker (Run) retries, and Wait
// sees the third attempt succeed.
func ExampleFailTimes() {
	rdb, closeRedis := exampleRedis()
	defer closeRedis()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	rc := webhookstest.NewReceiver()
	defer rc.Close()
	rc.Answer(webhookstest.FailTimes(2, http.StatusServiceUnavailable))
	d, err := webhooks.New(rdb, webhooks.Options{AllowPrivateNetworks: true,
		RetrySchedule: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}})
	if err != nil {
		panic(err)
	}
	wh, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: rc.URL(), Events: []string{"order.*"}})
	if err != nil {
		panic(err)
	}
	rc.SetKeyOf(wh)
	worker, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(worker) }()
	defer func() { stop(); <-done }()

	if _, err := d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "order-2"}); err != nil {
		panic(err)
	}
	err = rc.Wait(ctx, func(reqs []webhookstest.Request) bool {
		return len(reqs) > 0 && reqs[len(reqs)-1].Succeeded()
	})
	fmt.Println("wait:", err)
	for _, q := range rc.Received("order-2") {
		fmt.Println("attempt", q.Attempt, q.Status)
	}
	// Output:
	// wait: <nil>
	// attempt 1 503
	// attempt 2 503
	// attempt 3 200
}
