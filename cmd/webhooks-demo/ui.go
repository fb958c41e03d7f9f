package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// runUI serves the web UI on listen with some webhooks and deliveries in it, until ctx ends. ready, when
// set, is called with the operator's UI URL once it serves.
func runUI(ctx context.Context, w io.Writer, redisAddr, listen string, ready func(url string)) (err error) {
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

	// The subscribers: /ok answers 200, /down always 500.
	rln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	rsrv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/down" {
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
		PortalKey: []byte(rand.Text() + rand.Text()), RetrySchedule: []time.Duration{time.Second, 3 * time.Second}})
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
		{Tenant: "globex", URL: base + "/ok/shipping", Events: []string{"*"}, Description: "Globex shipping"},
	}
	for i := range hooks {
		if _, err := d.Webhooks().Create(ctx, hooks[i]); err != nil {
			return err
		}
	}
	for i := range 12 {
		for _, evt := range []webhooks.Event{
			{Tenant: "acme", Type: "order.created", ID: fmt.Sprintf("ord_%03d", i), Data: map[string]any{"order": i, "total": 25 * (i + 1)}},
			{Tenant: "acme", Type: "invoice.paid", ID: fmt.Sprintf("inv_%03d", i), Data: map[string]any{"invoice": i}},
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
	fmt.Fprintln(w, "          3 webhooks, 36 events; acme's billing receiver answers 503, so its deliveries retry and fail")
	fmt.Fprintln(w, "          Ctrl-C to stop")
	if ready != nil {
		ready(url)
	}
	<-ctx.Done()
	return nil
}
