package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// A webhook authenticates to an endpoint behind a gateway: here with OAuth2 client credentials (the
// token fetched once and shared by every replica through Redis) and, for another endpoint, basic auth.
func ExampleEndpointAuth() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	var tokens atomic.Int32
	tokenURL := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, secret, _ := r.BasicAuth(); id != "my-client" || secret != "my-secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		tokens.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "t0ken", "token_type": "Bearer", "expires_in": 3600})
	}))
	defer tokenURL.Close()
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0ken" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer endpoint.Close()
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pass, _ := r.BasicAuth(); user != "alice" || pass != "pa55" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer gateway.Close()

	d, err := webhooks.New(rdb, webhooks.Options{AllowPrivateNetworks: true}) // receivers on loopback
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, w := range []webhooks.Webhook{
		{URL: endpoint.URL, Events: []string{"order.*"}, Auth: &webhooks.EndpointAuth{OAuth2: &webhooks.OAuth2ClientCredentials{
			TokenURL: tokenURL.URL, ClientID: "my-client", ClientSecret: "my-secret", Scopes: []string{"webhooks"}}}},
		{URL: gateway.URL, Events: []string{"order.*"}, Auth: &webhooks.EndpointAuth{
			Basic: &webhooks.BasicAuth{User: "alice", Password: "pa55"}}},
	} {
		if _, err := d.Webhooks().Create(ctx, w); err != nil {
			panic(err)
		}
	}
	for _, id := range []string{"o1", "o2"} {
		res, err := d.Dispatch(ctx, webhooks.Event{Type: "order.created", ID: id})
		if err != nil {
			panic(err)
		}
		for _, r := range res {
			fmt.Println(id, r.Delivery.Status)
		}
	}
	fmt.Println("token requests:", tokens.Load())
	// Output:
	// o1 success
	// o1 success
	// o2 success
	// o2 success
	// token requests: 1
}
