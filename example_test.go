package webhooks_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// Dispatching the same event twice delivers it once: the second call returns the first delivery.
func ExampleDispatcher_Dispatch() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	var secret string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Println("received, signature valid:", webhooks.Verify(secret, r.Header, body) == nil)
	}))
	defer receiver.Close()

	ctx := context.Background()
	// AllowPrivateNetworks lets the example deliver to its loopback receiver.
	d, _ := webhooks.New(rdb, webhooks.Options{AllowPrivateNetworks: true})
	w, _ := d.Webhooks().Create(ctx, webhooks.Webhook{URL: receiver.URL, Events: []string{"pool.*"}})
	secret = w.Secret

	evt := webhooks.Event{Type: "pool.created", ID: "pool-42", Data: map[string]int{"size": 3}}
	for range 2 {
		results, _ := d.Dispatch(ctx, evt)
		r := results[0]
		fmt.Println(r.Delivery.Status, "duplicate:", r.Duplicate)
	}
	// Output:
	// received, signature valid: true
	// success duplicate: false
	// success duplicate: true
}

// A receiver checks each request's signature with the webhook's secret before trusting its body.
func ExampleVerify() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := webhooks.Verify(secret, r.Header, body); err != nil {
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})

	// A request without the Standard Webhooks headers is refused.
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/hooks", nil))
	fmt.Println(rec.Code)
	// Output: 401
}
