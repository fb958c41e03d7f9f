package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/webhookstest"
)

// Operational webhooks: with Options.OperationalEvents, the operator's webhook subscribed to
// delivery.failed hears, as an ordinary signed delivery made by the worker, of a customer's delivery
// that failed for good. (The customer's own webhooks subscribed to it would hear of it too; another
// tenant's never.)
func ExampleOptions_operationalEvents() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	customer, operator := webhookstest.NewReceiver(), webhookstest.NewReceiver()
	defer customer.Close()
	defer operator.Close()
	customer.Answer(webhookstest.Always(http.StatusInternalServerError))

	d, err := webhooks.New(rdb, webhooks.Options{
		OperationalEvents:    true,
		AllowPrivateNetworks: true,              // the receivers listen on loopback
		RetrySchedule:        []time.Duration{}, // no retries: the first failed attempt fails the delivery
	})
	if err != nil {
		panic(err)
	}
	failing, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: customer.URL(), Tenant: "acme", Events: []string{"order.*"}})
	if err != nil {
		panic(err)
	}
	ops, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: operator.URL(), Events: []string{"delivery.failed", "circuit.*"}})
	if err != nil {
		panic(err)
	}
	operator.SetKeyOf(ops)

	var worker sync.WaitGroup
	workerCtx, stop := context.WithCancel(ctx)
	worker.Go(func() { _ = d.Run(workerCtx) }) // delivers the operational events
	defer func() { stop(); worker.Wait() }()

	if _, err := d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "order-1", Tenant: "acme"}); err != nil {
		panic(err)
	}
	err = operator.Wait(ctx, func(reqs []webhookstest.Request) bool { return len(reqs) > 0 && reqs[0].Succeeded() })
	if err != nil {
		panic(err)
	}
	req := operator.Requests()[0]
	var data webhooks.OperationalData
	if err := json.Unmarshal(req.Data, &data); err != nil {
		panic(err)
	}
	fmt.Println(req.Type, "verified:", req.Verified)
	fmt.Println("about:", data.WebhookID == failing.ID, data.Tenant, data.EventID, data.EventType)
	fmt.Println("last attempt:", data.Attempts, data.LastStatusCode, data.LastError)
	// Output:
	// delivery.failed verified: true
	// about: true acme order-1 order.paid
	// last attempt: 1 500 HTTP 500
}
