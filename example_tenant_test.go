package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// Enqueue is the producer's fast path: it claims and schedules in one round trip, and the worker
// (Run) of the same process starts the attempt at once.
func ExampleDispatcher_Enqueue() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	delivered := make(chan struct{}, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer receiver.Close()
	d, err := webhooks.New(rdb, webhooks.Options{
		AllowPrivateNetworks: true, // the receiver is on loopback, which the egress guard refuses by default
		Hooks:                webhooks.Hooks{DeliverySucceeded: func(webhooks.Delivery) { delivered <- struct{}{} }},
	})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	if _, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: receiver.URL, Events: []string{"order.*"}}); err != nil {
		panic(err)
	}

	results, err := d.Enqueue(ctx, webhooks.Event{Type: "order.paid", ID: "ord_1", Data: map[string]int{"total": 120}})
	if err != nil {
		panic(err) // ErrNotAccepted: enqueue again, it is safe
	}
	fmt.Println("enqueued:", results[0].Delivery.Status, "attempts:", results[0].Delivery.Attempts)
	<-delivered
	fmt.Println("delivered by the worker")
	stop()
	<-done
	d.CloseIdleConnections()
	// Output:
	// enqueued: pending attempts: 0
	// delivered by the worker
}

// A SaaS gives each customer (tenant) its own endpoints: here customer acme registers an endpoint
// through the portal (opened by a token naming acme), and receives acme's events and no one else's;
// the portal never shows another tenant's webhooks.
func ExampleDispatcher_Portal() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	var acmeGot, globexGot atomic.Int32
	acme := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { acmeGot.Add(1) }))
	defer acme.Close()
	globex := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { globexGot.Add(1) }))
	defer globex.Close()
	d, err := webhooks.New(rdb, webhooks.Options{
		AllowPrivateNetworks: true,                                         // the receivers are on loopback
		PortalKey:            []byte("an example key of 32 bytes or more"), // keep a real one secret
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	theirs, err := d.Webhooks().Create(ctx, webhooks.Webhook{Tenant: "globex", URL: globex.URL, Events: []string{"*"}})
	if err != nil {
		panic(err)
	}

	portal := httptest.NewServer(d.Portal()) // mount it under your app's prefix in production
	defer portal.Close()
	token, err := d.PortalToken("acme", time.Hour)
	if err != nil {
		panic(err)
	}
	call := func(method, path, body string) int {
		req, _ := http.NewRequest(method, portal.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	fmt.Println("acme registers an endpoint:", call("POST", "/webhooks", `{"url":"`+acme.URL+`","events":["order.*"]}`))
	fmt.Println("acme reads globex's webhook:", call("GET", "/webhooks/"+theirs.ID, ""))

	for _, tenant := range []string{"acme", "globex"} {
		if _, err := d.Dispatch(ctx, webhooks.Event{Tenant: tenant, Type: "order.paid", ID: "ord_1"}); err != nil {
			panic(err)
		}
	}
	fmt.Println("acme got", acmeGot.Load(), "globex got", globexGot.Load())
	d.CloseIdleConnections()
	// Output:
	// acme registers an endpoint: 201
	// acme reads globex's webhook: 404
	// acme got 1 globex got 1
}
