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
