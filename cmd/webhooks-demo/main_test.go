package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/require"
)

const verdict = "22 dispatches of one event → 2 requests (1 per webhook)"

// settledGoroutines waits (bounded) for the goroutine count to fall back to at most base, and returns it.
func settledGoroutines(base int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 200 && n > base; i++ {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

func TestRunEmbedded(t *testing.T) {
	base := runtime.NumGoroutine()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, run(ctx, &out, ""), out.String())
	require.Contains(t, out.String(), "\n"+verdict+"\n")
	require.True(t, strings.HasSuffix(out.String(), verdict+"\n"), "the verdict is the last line:\n%s", out.String())
	require.Contains(t, out.String(), "0 fresh, 40 duplicate")
	require.Equal(t, 2, strings.Count(out.String(), "✓ verified"), out.String())
	require.LessOrEqual(t, settledGoroutines(base), base, "goroutines outlived run")
}

// TestRunExternal runs the demo as on a real Redis (-redis), on a miniredis it does not own, and checks
// that it deletes every key it wrote.
func TestRunExternal(t *testing.T) {
	mr := miniredis.RunT(t)
	base := runtime.NumGoroutine()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, run(ctx, &out, mr.Addr()), out.String())
	require.Contains(t, out.String(), "\n"+verdict+"\n")
	require.Contains(t, out.String(), "cleanup   deleted ")
	require.Empty(t, mr.Keys(), "the demo left keys behind")
	require.LessOrEqual(t, settledGoroutines(base), base, "goroutines outlived run")
}

// TestRunUI: -ui serves the web UI and the admin API on localhost, with webhooks and deliveries in it,
// and says where; it stops when its context ends.
func TestRunUI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- runUI(ctx, &out, "", "127.0.0.1:0", func(u string) { urls <- u }) }()
	var ui string
	select {
	case ui = <-urls:
	case err := <-done:
		t.Fatalf("runUI returned early: %v", err)
	}
	get := func(url string) string {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, b)
		return string(b)
	}
	require.Contains(t, get(ui), `<script src="app.js"`)
	api := strings.TrimSuffix(ui, "/ui/")
	var list struct {
		Webhooks []struct {
			ID string `json:"id"`
		} `json:"webhooks"`
	}
	require.NoError(t, json.Unmarshal([]byte(get(api+"/webhooks")), &list))
	require.Len(t, list.Webhooks, 3)
	var page struct {
		Deliveries []json.RawMessage `json:"deliveries"`
	}
	require.NoError(t, json.Unmarshal([]byte(get(api+"/webhooks/"+list.Webhooks[0].ID+"/deliveries")), &page))
	require.NotEmpty(t, page.Deliveries)
	require.Contains(t, out.String(), "web UI    "+ui)
	require.Contains(t, out.String(), "/portal/ui/#token=wpt1.")
	cancel()
	require.NoError(t, <-done)
}

// TestRunUIStory: within seconds (the story shortened), the always-failing webhook's circuit opens with
// deliveries parked, then it is disabled and its deliveries fail; the recovering webhook's circuit
// closes and its deliveries are delivered; the output tells the story and shows the egress guard's
// refusal naming the options. On a Redis it does not own, it leaves no key behind.
func TestRunUIStory(t *testing.T) {
	mr := miniredis.RunT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	urls := make(chan string, 1)
	done := make(chan error, 1)
	st := story{breakFor: 200 * time.Millisecond, recoverAfter: 1500 * time.Millisecond, disableAfter: 2 * time.Second}
	go func() { done <- runStory(ctx, &out, mr.Addr(), "127.0.0.1:0", st, func(u string) { urls <- u }) }()
	var api string
	select {
	case u := <-urls:
		api = strings.TrimSuffix(u, "/ui/")
	case err := <-done:
		t.Fatalf("runStory returned early: %v", err)
	}
	getJSON := func(path string, v any) {
		resp, err := http.Get(api + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
	}
	var list struct {
		Webhooks []struct{ ID, URL string }
	}
	getJSON("/webhooks", &list)
	ids := map[string]string{}
	for _, w := range list.Webhooks {
		ids[w.URL[strings.LastIndex(w.URL, "/"):]] = w.ID
	}
	type counts struct{ Pending, Parked, Failed, Examined int }
	type health struct{ State string }
	var c counts
	var h health
	getJSON("/webhooks/"+ids["/down"]+"/counts", &c)
	getJSON("/webhooks/"+ids["/down"]+"/health", &h)
	require.Equal(t, "open", h.State, "the failing webhook is paused at once")
	require.Positive(t, c.Parked, "with deliveries parked")

	deadline := time.Now().Add(30 * time.Second)
	for {
		var down, shipping counts
		var sh health
		var w struct{ Disabled bool }
		getJSON("/webhooks/"+ids["/down"]+"/counts", &down)
		getJSON("/webhooks/"+ids["/down"], &w)
		getJSON("/webhooks/"+ids["/shipping"]+"/counts", &shipping)
		getJSON("/webhooks/"+ids["/shipping"]+"/health", &sh)
		if w.Disabled && down.Failed > 0 && sh.State == "closed" && shipping.Pending == 0 && shipping.Failed == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the story did not end: down %+v disabled %t, shipping %+v %s", down, w.Disabled, shipping, sh.State)
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	require.NoError(t, <-done)
	for _, want := range []string{"circuit opens (paused)", "disabled at its next failed probe", "the circuit closes", "Try now",
		"Options.AllowedNetworks", "Options.AllowPrivateNetworks"} {
		require.Contains(t, out.String(), want)
	}
	require.Empty(t, mr.Keys(), "the demo left keys behind")
}
