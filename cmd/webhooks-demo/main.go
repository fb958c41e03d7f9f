// Command webhooks-demo shows the library's central guarantee: one delivery per (webhook, event),
// however often and however concurrently the event is dispatched.
//
// On an embedded miniredis (or the Redis given with -redis, whose keys under the demo's random prefix
// it deletes at the end) it registers two webhooks that select pool.created, one exactly and one
// through pool.*, with a local receiver that checks every signature with webhooks.Verify. It then
// dispatches one event (pool.created, id pool-42) twice in a row and 20 times at once, with the retry
// worker running, and prints the fresh and duplicate results, what the receiver got and the delivery
// records. It exits non-zero unless each webhook received exactly one correctly signed request.
//
//	go run ./cmd/webhooks-demo [-redis 127.0.0.1:6379]
//
// With -ui it serves the web UI instead, on -addr (default 127.0.0.1:8080), with three webhooks of two
// tenants and some deliveries (one webhook's receiver always fails, so there are failures, retries and an
// open circuit to look at), and prints the operator's URL and a tenant portal URL with its token. It
// runs until interrupted.
//
//	go run ./cmd/webhooks-demo -ui [-addr 127.0.0.1:8080] [-redis 127.0.0.1:6379]
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

func main() {
	addr := flag.String("redis", "", "address of a Redis to use instead of an embedded miniredis")
	ui := flag.Bool("ui", false, "serve the web UI with some deliveries in it, until interrupted")
	listen := flag.String("addr", "127.0.0.1:8080", "with -ui: the address to serve the UI on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	var err error
	if *ui {
		err = runUI(ctx, os.Stdout, *addr, *listen, nil)
	} else {
		err = run(ctx, os.Stdout, *addr)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhooks-demo:", err)
		os.Exit(1)
	}
}

// run runs the demo on the Redis at redisAddr (an embedded miniredis when empty) and writes its report
// to w. It fails unless every webhook received exactly one verified request.
func run(ctx context.Context, w io.Writer, redisAddr string) error {
	external, where := redisAddr != "", "Redis at "+redisAddr
	if !external {
		mr, err := miniredis.Run()
		if err != nil {
			return fmt.Errorf("start miniredis: %w", err)
		}
		defer mr.Close()
		redisAddr, where = mr.Addr(), "embedded miniredis at "+mr.Addr()
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s: %w", redisAddr, err)
	}
	prefix := "webhooks-demo-" + rand.Text()[:10]
	fmt.Fprintf(w, "redis     %s, key prefix %s\n", where, prefix)

	verdict, err := demo(ctx, w, rdb, prefix)
	if external {
		n, cerr := deleteKeys(ctx, rdb, "{"+prefix+":*")
		fmt.Fprintf(w, "cleanup   deleted %d keys\n", n)
		err = errors.Join(err, cerr)
	}
	fmt.Fprintln(w, verdict)
	return err
}

// receiver is the subscribers' side: one URL path per webhook, whose secret it knows.
type receiver struct {
	mu      sync.Mutex
	secrets map[string]string   // URL path -> secret
	got     map[string][]string // URL path -> "webhook-id <id>  ✓ verified", one per request
	total   int                 // requests, to any path
	failed  int                 // requests that did not verify
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	secret, known := rc.secrets[r.URL.Path]
	code, mark := http.StatusNoContent, "✓ verified"
	if err != nil || !known || webhooks.Verify(secret, r.Header, body) != nil {
		code, mark = http.StatusUnauthorized, "✗ NOT VERIFIED"
		rc.failed++
	}
	rc.total++
	rc.got[r.URL.Path] = append(rc.got[r.URL.Path], "webhook-id "+r.Header.Get("webhook-id")+"  "+mark)
	w.WriteHeader(code)
}

// demo runs the receiver, the dispatcher and its retry worker, prints what happens and returns the
// verdict line. Neither the worker nor the receiver outlives it.
func demo(ctx context.Context, w io.Writer, rdb redis.UniversalClient, prefix string) (verdict string, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "FAIL: no receiver", err
	}
	rc := &receiver{secrets: map[string]string{}, got: map[string][]string{}}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		// Every request has been answered once Dispatch and the worker have returned. Close, not
		// Shutdown: Shutdown would wait 5s for connections the client dialed but never used.
		err = errors.Join(err, srv.Close())
		<-served
	}()

	d, err := webhooks.New(rdb, webhooks.Options{AllowPrivateNetworks: true, KeyPrefix: prefix, Timeout: 5 * time.Second})
	if err != nil {
		return "FAIL: no dispatcher", err
	}
	wctx, stopWorker := context.WithCancel(ctx)
	var worker sync.WaitGroup
	var werr error
	worker.Go(func() { werr = d.Run(wctx) })
	defer func() { // runs before the receiver stops: the worker may be mid-attempt
		stopWorker()
		worker.Wait()
		if werr != nil {
			err = errors.Join(err, fmt.Errorf("retry worker: %w", werr))
		}
	}()

	fmt.Fprintf(w, "receiver  http://%s, on loopback: the egress guard blocks loopback and private addresses\n", ln.Addr())
	fmt.Fprintln(w, "          by default, so this demo sets Options.AllowPrivateNetworks (tests and local demos only)")
	paths, ids := []string{"/hook/1", "/hook/2"}, map[string]string{}
	for i, pattern := range []string{"pool.created", "pool.*"} {
		wh, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: "http://" + ln.Addr().String() + paths[i], Events: []string{pattern}})
		if err != nil {
			return "FAIL: cannot register webhooks", err
		}
		rc.mu.Lock()
		rc.secrets[paths[i]], ids[paths[i]] = wh.Secret, wh.ID
		rc.mu.Unlock()
		fmt.Fprintf(w, "webhook   %s  %-12s → %s\n", wh.ID, pattern, wh.URL)
	}

	// The event type, with the JSON Schema every pool.created event's data must satisfy: Dispatch
	// refuses data that fails it, before anything is claimed or sent.
	if _, err := d.EventTypes().Create(ctx, webhooks.EventType{Name: "pool.created", Description: "A pool was created.",
		Schema: json.RawMessage(`{"type": "object", "required": ["pool", "size"],
			"properties": {"pool": {"type": "string"}, "size": {"type": "integer", "minimum": 1}}}`),
		Examples: []json.RawMessage{json.RawMessage(`{"pool": "pool-1", "size": 4}`)}}); err != nil {
		return "FAIL: cannot register the event type", err
	}
	fmt.Fprintln(w, "type      pool.created, with a JSON Schema: {pool: string, size: integer ≥ 1}")
	_, refused := d.Dispatch(ctx, webhooks.Event{Type: "pool.created", ID: "pool-bad", Data: map[string]any{"pool": 42}})
	if !errors.Is(refused, webhooks.ErrInvalidEvent) {
		return "FAIL: data that fails the schema was not refused", refused
	}
	fmt.Fprintf(w, "          data that fails it is refused, nothing sent: %v\n", refused)

	evt := webhooks.Event{Type: "pool.created", ID: "pool-42", Data: map[string]any{"pool": "pool-42", "size": 8}}
	fmt.Fprintf(w, "dispatch  %s id %s, the same event every time\n", evt.Type, evt.ID)
	var problems []error
	calls := 0
	for i, n := range []int{1, 1, 20} {
		fresh, dup, err := dispatchN(ctx, d, evt, n)
		problems, calls = append(problems, err), calls+n
		how := "call"
		if n > 1 {
			how = "concurrent calls"
		}
		fmt.Fprintf(w, "  round %d: %2d %-16s → %2d fresh, %2d duplicate results\n", i+1, n, how, fresh, dup)
	}

	fmt.Fprintln(w, "          duplicate: the (webhook, event id) pair was claimed before; nothing was sent")
	fmt.Fprintln(w, "receiver")
	rc.mu.Lock()
	requests := rc.total
	for _, path := range paths {
		for _, line := range rc.got[path] {
			fmt.Fprintf(w, "  %s  %s\n", ids[path], line)
		}
		if len(rc.got[path]) != 1 {
			problems = append(problems, fmt.Errorf("webhook %s got %d requests, want 1", ids[path], len(rc.got[path])))
		}
	}
	if rc.failed > 0 || rc.total != len(paths) {
		problems = append(problems, fmt.Errorf("receiver got %d requests, %d unverified", rc.total, rc.failed))
	}
	rc.mu.Unlock()

	fmt.Fprintln(w, "deliveries")
	for _, path := range paths {
		ds, err := d.Deliveries().List(ctx, ids[path], 10)
		problems = append(problems, err)
		for _, dl := range ds {
			fmt.Fprintf(w, "  %s  %s  %-7s  attempts %d  last status %d\n", ids[path], dl.ID, dl.Status, dl.Attempts, dl.LastStatusCode)
		}
		if len(ds) != 1 {
			problems = append(problems, fmt.Errorf("webhook %s has %d delivery records, want 1", ids[path], len(ds)))
		}
	}
	if err := errors.Join(problems...); err != nil {
		return fmt.Sprintf("FAIL: %d dispatches of one event → %d requests, want 1 per webhook", calls, requests), err
	}
	return fmt.Sprintf("%d dispatches of one event → %d requests (1 per webhook)", calls, requests), nil
}

// dispatchN dispatches evt n times at once and counts the fresh and duplicate results.
func dispatchN(ctx context.Context, d *webhooks.Dispatcher, evt webhooks.Event, n int) (fresh, dup int, err error) {
	results, errs := make([][]webhooks.Result, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = d.Dispatch(ctx, evt) })
	}
	wg.Wait()
	for _, rs := range results {
		for _, r := range rs {
			switch {
			case r.Err != nil:
				errs = append(errs, fmt.Errorf("webhook %s: %w", r.WebhookID, r.Err))
			case r.Duplicate:
				dup++
			default:
				fresh++
			}
		}
	}
	return fresh, dup, errors.Join(errs...)
}

// deleteKeys deletes the keys matching pattern, with SCAN (never KEYS) and UNLINK.
func deleteKeys(ctx context.Context, rdb *redis.Client, pattern string) (deleted int64, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var cursor uint64
	for range 100_000 {
		keys, next, err := rdb.Scan(ctx, cursor, pattern, 500).Result()
		if err == nil && len(keys) > 0 {
			var n int64
			n, err = rdb.Unlink(ctx, keys...).Result()
			deleted += n
		}
		if err != nil {
			return deleted, fmt.Errorf("cleanup: %w", err)
		}
		if cursor = next; cursor == 0 {
			return deleted, nil
		}
	}
	return deleted, errors.New("cleanup: SCAN did not finish")
}
