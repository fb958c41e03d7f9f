package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// Events with the same OrderKey reach each webhook one at a time, in the order they were accepted:
// here the receiver fails the first request, and invoice.paid waits until the retry of
// invoice.created has succeeded, instead of arriving first.
func ExampleEvent_orderKey() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Type string }
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		defer mu.Unlock()
		status := http.StatusOK
		if len(got) == 0 {
			status = http.StatusServiceUnavailable
		}
		got = append(got, fmt.Sprint(body.Type, " ", status))
		if len(got) == 3 {
			close(done)
		}
		w.WriteHeader(status)
	}))
	defer receiver.Close()

	d, err := webhooks.New(rdb, webhooks.Options{
		AllowPrivateNetworks: true, // the receiver is on loopback
		RetrySchedule:        []time.Duration{100 * time.Millisecond},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: receiver.URL, Events: []string{"invoice.*"}}); err != nil {
		panic(err)
	}
	for _, evt := range []webhooks.Event{
		{Type: "invoice.created", ID: "evt_1", OrderKey: "inv_42"},
		{Type: "invoice.paid", ID: "evt_2", OrderKey: "inv_42"},
	} {
		if _, err := d.Enqueue(ctx, evt); err != nil {
			panic(err)
		}
	}
	workerCtx, stop := context.WithCancel(ctx)
	var worker sync.WaitGroup
	worker.Go(func() { _ = d.Run(workerCtx) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	stop()
	worker.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, r := range got {
		fmt.Println(r)
	}
	// Output:
	// invoice.created 503
	// invoice.created 200
	// invoice.paid 200
}
