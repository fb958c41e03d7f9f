package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// Handler has no authentication of its own: mount it behind yours, under a prefix that
// http.StripPrefix removes (its routes are relative to where it is mounted).
func ExampleDispatcher_Handler() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	d, err := webhooks.New(rdb, webhooks.Options{})
	if err != nil {
		panic(err)
	}

	// requireOperator stands for your own authentication and authorization.
	requireOperator := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer operator-token" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", requireOperator(d.Handler())))
	server := httptest.NewServer(mux)
	defer server.Close()

	call := func(method, path, body string, auth bool) {
		req, _ := http.NewRequest(method, server.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth {
			req.Header.Set("Authorization", "Bearer operator-token")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(method, path, resp.StatusCode)
	}
	call("POST", "/admin/webhooks", `{"url":"https://example.com/hooks","events":["pool.*"]}`, false)
	call("POST", "/admin/webhooks", `{"url":"https://example.com/hooks","events":["pool.*"]}`, true)
	call("GET", "/admin/webhooks", "", true)
	call("PUT", "/admin/webhooks", "", true)
	call("GET", "/admin/deliveries/dlv_unknown", "", true)
	// Output:
	// POST /admin/webhooks 401
	// POST /admin/webhooks 201
	// GET /admin/webhooks 200
	// PUT /admin/webhooks 405
	// GET /admin/deliveries/dlv_unknown 404
}

// SendTest sends a webhook.test event with a fresh id to one webhook, whatever its subscriptions and
// even while it is disabled; two test sends are never one.
func ExampleDispatcher_SendTest() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer receiver.Close()

	// The receiver is on loopback, which the egress guard refuses unless AllowPrivateNetworks is set.
	d, err := webhooks.New(rdb, webhooks.Options{AllowPrivateNetworks: true})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: receiver.URL, Events: []string{"pool.created"}, Disabled: true})
	if err != nil {
		panic(err)
	}
	for range 2 {
		dl, err := d.SendTest(ctx, w.ID)
		if err != nil { // ErrNotAccepted, or ErrDeferred with dl set: a worker makes the attempt
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(dl.EventType, dl.Status, strings.HasPrefix(dl.EventID, "test_"))
	}
	// Output:
	// webhook.test success true
	// webhook.test success true
}

// Page lists a webhook's deliveries newest first, a page at a time: pass each page's NextCursor to
// get the next one, until it is "".
func ExampleDeliveryRepo_Page() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer receiver.Close()

	// The receiver is on loopback, which the egress guard refuses unless AllowPrivateNetworks is set.
	d, err := webhooks.New(rdb, webhooks.Options{AllowPrivateNetworks: true})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: receiver.URL, Events: []string{"pool.*"}})
	if err != nil {
		panic(err)
	}
	for i := range 5 {
		if _, err := d.Dispatch(ctx, webhooks.Event{Type: "pool.created", ID: fmt.Sprint("pool-", i)}); err != nil {
			panic(err)
		}
	}

	q := webhooks.DeliveryQuery{Limit: 2} // Status: webhooks.StatusFailed would keep only failed ones
	for {
		page, err := d.Deliveries().Page(ctx, w.ID, q)
		if err != nil {
			panic(err)
		}
		fmt.Println("page of", len(page.Deliveries), "more:", page.NextCursor != "")
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	// Output:
	// page of 2 more: true
	// page of 2 more: true
	// page of 1 more: false
}
