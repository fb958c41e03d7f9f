package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// A customer who registers an endpoint after events happened asks for what it missed: ReplayMissing
// sends the new endpoint its tenant's events since a time that it subscribes to, once each; a second
// call sends nothing more. It needs Options.ReplayIndex.
func ExampleDispatcher_ReplayMissing() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	var got atomic.Int32
	delivered := make(chan struct{}, 8)
	receiver := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got.Add(1) }))
	defer receiver.Close()
	d, err := webhooks.New(rdb, webhooks.Options{
		AllowPrivateNetworks: true, // the receiver is on loopback
		ReplayIndex:          true, // index events by time, for ReplayMissing
		Hooks:                webhooks.Hooks{DeliverySucceeded: func(webhooks.Delivery) { delivered <- struct{}{} }},
	})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()

	since := time.Now().Add(-time.Minute)
	for _, e := range []webhooks.Event{
		{Tenant: "acme", Type: "order.paid", ID: "ord_1"},
		{Tenant: "acme", Type: "order.paid", ID: "ord_2"},
		{Tenant: "acme", Type: "user.created", ID: "usr_1"}, // not subscribed to below
		{Tenant: "globex", Type: "order.paid", ID: "ord_3"}, // another tenant's
	} {
		if _, err := d.Enqueue(ctx, e); err != nil { // no endpoint yet: stored for replay
			panic(err)
		}
	}
	wh, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: receiver.URL, Events: []string{"order.*"}, Tenant: "acme"})
	if err != nil {
		panic(err)
	}
	n, err := d.ReplayMissing(ctx, wh.ID, since)
	if err != nil {
		panic(err)
	}
	fmt.Println("scheduled:", n)
	<-delivered
	<-delivered
	again, _ := d.ReplayMissing(ctx, wh.ID, since)
	fmt.Println("received:", got.Load(), "scheduled again:", again)
	stop()
	<-done
	d.CloseIdleConnections()
	// Output:
	// scheduled: 2
	// received: 2 scheduled again: 0
}
