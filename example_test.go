package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// quickStart is the README's quick start, word for word (TestExampleQuickStartIsTheREADMEs checks it).
func quickStart(ctx context.Context, rdb redis.UniversalClient, opts webhooks.Options, url string) error {
	d, err := webhooks.New(rdb, opts) // rdb: redis.NewClient, NewClusterClient or NewFailoverClient
	if err != nil {
		return err
	}
	// The returned webhook's Secret ("whsec_…") goes to the subscriber, who checks requests with Verify.
	_, err = d.Webhooks().Create(ctx, webhooks.Webhook{
		URL:    url,
		Events: []string{"pool.*"}, // exact types, prefix.* at any depth, or *
	})
	if err != nil {
		return err
	}

	results, err := d.Dispatch(ctx, webhooks.Event{Type: "pool.created", ID: "pool-42", Data: map[string]int{"size": 8}})
	if err != nil && !errors.Is(err, webhooks.ErrNotAccepted) {
		return err // ErrInvalidEvent: nothing was claimed
	}
	for _, r := range results {
		if !r.Accepted() { // only when err wraps ErrNotAccepted
			fmt.Println(r.WebhookID, "not accepted:", r.Err)
			continue
		}
		// r.Err may wrap ErrDeferred: the pair is recorded and a worker (Run) makes the attempt.
		fmt.Println(r.Delivery.Status, "duplicate:", r.Duplicate)
	}
	return err // ErrNotAccepted: dispatch the same event again; the recorded pairs come back as duplicates
}

// The quick start of the README, run against an embedded miniredis and a local receiver.
func Example_quickStart() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer receiver.Close()

	// The receiver listens on loopback, which the egress guard refuses by default:
	// AllowPrivateNetworks turns the guard off, for tests and demos only.
	opts := webhooks.Options{AllowPrivateNetworks: true}
	if err := quickStart(context.Background(), rdb, opts, receiver.URL); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// success duplicate: false
}

// TestExampleQuickStartIsTheREADMEs checks that the README's quick start is quickStart as compiled here.
func TestExampleQuickStartIsTheREADMEs(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(src), "func quickStart(")
	end := strings.Index(string(src)[start:], "\n}\n")
	if start < 0 || end < 0 {
		t.Fatal("quickStart not found in example_test.go")
	}
	code := string(src)[start : start+end+3]
	if !strings.Contains(string(readme), "```go\n"+code+"```\n") {
		t.Errorf("README.md's quick start is not quickStart of example_test.go:\n%s", code)
	}
}

// Dispatching the same event twice delivers it once: the second call returns the first delivery with
// Duplicate set, and sends nothing.
func ExampleDispatcher_Dispatch() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	var requests atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	defer receiver.Close()

	ctx := context.Background()
	// The receiver is on loopback, which the egress guard refuses unless AllowPrivateNetworks is set.
	d, err := webhooks.New(rdb, webhooks.Options{AllowPrivateNetworks: true})
	if err != nil {
		panic(err)
	}
	if _, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: receiver.URL, Events: []string{"pool.*"}}); err != nil {
		panic(err)
	}

	evt := webhooks.Event{Type: "pool.created", ID: "pool-42", Data: map[string]int{"size": 3}}
	for range 2 {
		results, err := d.Dispatch(ctx, evt)
		if err != nil { // ErrNotAccepted: some pair is not recorded; dispatching again is safe
			fmt.Println("not accepted:", err)
			continue
		}
		for _, r := range results { // err == nil: every Result has a Delivery
			fmt.Println(r.Delivery.Status, "duplicate:", r.Duplicate)
		}
	}
	fmt.Println("requests:", requests.Load())
	// Output:
	// success duplicate: false
	// success duplicate: true
	// requests: 1
}
