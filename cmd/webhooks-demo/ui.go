package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// story is the timing of the failing endpoints' story the UI demo tells.
type story struct {
	breakFor     time.Duration // a circuit's first open period (Options.BreakFor); each failed probe doubles it
	recoverAfter time.Duration // how long the recovering receiver fails before it answers 200
	disableAfter time.Duration // Options.DisableAfter: the always-failing webhook is disabled after it
}

// demoStory is the story runUI tells on the command line: visible within seconds.
var demoStory = story{breakFor: 2 * time.Second, recoverAfter: 10 * time.Second, disableAfter: 20 * time.Second}

// runUI serves the web UI on listen with some webhooks and deliveries in it, until ctx ends. ready, when
// set, is called with the operator's UI URL once it serves.
func runUI(ctx context.Context, w io.Writer, redisAddr, listen string, ready func(url string)) error {
	return runStory(ctx, w, redisAddr, listen, demoStory, ready)
}

// runStory is runUI with the story's timing.
func runStory(ctx context.Context, w io.Writer, redisAddr, listen string, st story, ready func(url string)) (err error) {
	external := redisAddr != ""
	if !external {
		mr, err := miniredis.Run()
		if err != nil {
			return fmt.Errorf("start miniredis: %w", err)
		}
		defer mr.Close()
		redisAddr = mr.Addr()
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s: %w", redisAddr, err)
	}
	prefix := "webhooks-demo-" + rand.Text()[:10]
	if external {
		defer func() {
			n, cerr := deleteKeys(ctx, rdb, "{"+prefix+":*")
			fmt.Fprintf(w, "cleanup   deleted %d keys\n", n)
			err = errors.Join(err, cerr)
		}()
	}

	// The subscribers: /ok answers 200, /down always 503, /recovering 503 until st.recoverAfter.
	rln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	back := time.Now().Add(st.recoverAfter)
	rsrv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/down" || strings.HasPrefix(r.URL.Path, "/recovering") && time.Now().Before(back) {
			rw.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(rw, `{"error":"maintenance"}`)
			return
		}
		_, _ = io.WriteString(rw, `{"ok":true}`)
	})}
	var servers sync.WaitGroup
	servers.Go(func() { _ = rsrv.Serve(rln) })
	defer func() { _ = rsrv.Close(); servers.Wait() }()

	d, err := webhooks.New(rdb, webhooks.Options{AllowPrivateNetworks: true, KeyPrefix: prefix, Timeout: 5 * time.Second,
		PortalKey: []byte(rand.Text() + rand.Text()), RetrySchedule: []time.Duration{time.Second, 3 * time.Second},
		BreakAfter: 3, BreakFor: st.breakFor, DisableAfter: st.disableAfter})
	if err != nil {
		return err
	}
	wctx, stopWorker := context.WithCancel(ctx)
	var worker sync.WaitGroup
	worker.Go(func() { _ = d.Run(wctx) })
	defer func() { stopWorker(); worker.Wait() }()

	base := "http://" + rln.Addr().String()
	hooks := []webhooks.Webhook{
		{Tenant: "acme", URL: base + "/ok/orders", Events: []string{"order.*"}, Description: "Acme order sync"},
		{Tenant: "acme", URL: base + "/down", Events: []string{"invoice.*"}, Description: "Acme billing (its receiver is down)",
			Headers: map[string]string{"X-Api-Key": "demo-key"}},
		{Tenant: "globex", URL: base + "/recovering/shipping", Events: []string{"*"},
			Description: fmt.Sprintf("Globex shipping (its receiver is back after %s)", st.recoverAfter)},
	}
	for i := range hooks {
		if _, err := d.Webhooks().Create(ctx, hooks[i]); err != nil {
			return err
		}
	}
	for i := range 12 {
		for _, evt := range []webhooks.Event{
			{Tenant: "acme", Type: "order.created", ID: fmt.Sprintf("ord_%03d", i), Data: map[string]any{"order": i, "total": 25 * (i + 1)}},
			{Tenant: "acme", Type: "invoice.paid", ID: fmt.Sprintf("inv_%03d", i), Data: map[string]any{"invoice": i},
				OrderKey: fmt.Sprintf("customer-%d", i%3)}, // each customer's invoices in order
			{Tenant: "globex", Type: "shipment.sent", ID: fmt.Sprintf("shp_%03d", i), Data: map[string]any{"parcel": i}},
		} {
			if _, err := d.Dispatch(ctx, evt); err != nil && !errors.Is(err, webhooks.ErrNotAccepted) {
				return err
			}
		}
	}

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("serve the UI: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/portal/", http.StripPrefix("/portal", d.Portal()))
	mux.Handle("/", d.Handler()) // no authentication: a local demo only
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	servers.Go(func() { _ = srv.Serve(ln) })
	defer func() { _ = srv.Close() }()
	token, err := d.PortalToken("acme", 12*time.Hour)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String() + "/ui/"
	fmt.Fprintf(w, "web UI    %s  (operator: every tenant; the admin API has no auth: keep it on localhost)\n", url)
	fmt.Fprintf(w, "portal    http://%s/portal/ui/#token=%s  (tenant acme, 12 h)\n", ln.Addr(), token)
	fmt.Fprintln(w, "          3 webhooks, 36 events; two receivers fail, so there is a story to watch on the Endpoints page:")
	fmt.Fprintf(w, "story     acme billing answers 503: after 3 failures in a row its circuit opens (paused), its other deliveries are parked\n")
	fmt.Fprintf(w, "          (attempts already in flight then count too: its page may say 4 or 5 failures),\n")
	fmt.Fprintf(w, "          and a probe goes out after %s, then after twice as long each time it fails; failing for %s, it is\n", st.breakFor, st.disableAfter)
	fmt.Fprintln(w, "          disabled at its next failed probe and its parked deliveries fail (its invoices wait in order per customer)")
	fmt.Fprintf(w, "          globex shipping answers 503 for %s: paused, then a probe succeeds, the circuit closes and the parked\n", st.recoverAfter)
	fmt.Fprintln(w, "          deliveries go out; once its receiver is back, Try now on its page does it at once")
	fmt.Fprintf(w, "egress    %s\n", egressRefusal(ctx, rdb, base))
	fmt.Fprintln(w, "          Ctrl-C to stop")
	if ready != nil {
		ready(url)
	}
	<-ctx.Done()
	return nil
}

// egressRefusal is what a Dispatcher with default options says of the demo's loopback receiver: the
// egress guard refuses it, and its error names the options that would allow it. Nothing is written.
func egressRefusal(ctx context.Context, rdb redis.UniversalClient, base string) string {
	d, err := webhooks.New(rdb, webhooks.Options{KeyPrefix: "webhooks-demo-guarded-" + rand.Text()[:10]})
	if err == nil {
		_, err = d.Webhooks().Create(ctx, webhooks.Webhook{URL: base + "/ok", Events: []string{"*"}})
	}
	if err == nil {
		return "default options accepted a loopback URL"
	}
	return "with default options, Create refuses this loopback receiver: " + err.Error()
}
