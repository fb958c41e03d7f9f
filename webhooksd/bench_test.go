package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
)

// benchEvents is how many events each arm of a round delivers.
const benchEvents = 20_000

// benchClients is how many producers send at once: HTTP clients (keep-alive) or Enqueue callers.
const benchClients = 64

// BenchmarkIngestEndToEnd measures events delivered per second, from the first event sent to the
// last one received by a loopback receiver, three ways on one redis-server of the test's own, in
// interleaved rounds (b.N rounds; the order of the arms rotates): the library's Enqueue in this
// process with its worker (the limit), and the webhooksd binary taking the same events over HTTP from
// 64 keep-alive clients, one event per request and in batches of 100, its worker delivering them.
// It reports each arm's median and the medians of the per-round ratios to Enqueue, and the binary's
// resident memory idle (VmRSS after start) and under load (VmHWM, its peak, after every round).
//
//	flock /tmp/webhooks-heavy.lock go test -run '^$' -bench IngestEndToEnd -benchtime 5x .
func BenchmarkIngestEndToEnd(b *testing.B) {
	addr := realRedis(b)
	rc := &countingReceiver{}
	rsrv := httptest.NewServer(rc)
	b.Cleanup(rsrv.Close)

	// The library in this process, with its worker.
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	b.Cleanup(func() { _ = rdb.Close() })
	d, err := webhooks.New(rdb, webhooks.Options{KeyPrefix: "bench-lib-" + randomHex(4), AllowPrivateNetworks: true})
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = d.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-runDone })
	_, err = d.Webhooks().Create(ctx, webhooks.Webhook{URL: rsrv.URL + "/lib", Events: []string{"*"}})
	require.NoError(b, err)

	// The binary.
	srv := startServer(b, serverArgs(addr, "bench-srv-"+randomHex(4)))
	a := newAPI(b, func() string { return "http://" + srv.addr }, testKey)
	a.createWebhook(rsrv.URL+"/srv", []string{"*"}, "")
	idleRSS := procStatusKiB(b, srv.cmd.Process.Pid, "VmRSS")

	tr := &http.Transport{MaxIdleConnsPerHost: benchClients, MaxConnsPerHost: benchClients, IdleConnTimeout: time.Minute}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: time.Minute}

	arms := []struct {
		name string
		run  func(round int) time.Duration
	}{
		{"enqueue", func(round int) time.Duration {
			return deliver(b, rc, func() {
				sendAll(benchEvents, func(i int) {
					_, err := d.Enqueue(ctx, webhooks.Event{ID: fmt.Sprintf("r%d-e%d", round, i), Type: "order.created",
						Data: map[string]any{"order": i, "total": 4200}})
					if err != nil {
						b.Error(err)
					}
				})
			})
		}},
		{"single", func(round int) time.Duration {
			bodies := make([][]byte, benchEvents)
			for i := range bodies {
				bodies[i], _ = json.Marshal(map[string]any{"id": fmt.Sprintf("r%d-s%d", round, i), "type": "order.created",
					"data": map[string]any{"order": i, "total": 4200}})
			}
			return deliver(b, rc, func() { sendAll(len(bodies), func(i int) { postBody(b, client, srv.url("/v1/events"), bodies[i]) }) })
		}},
		{"batch100", func(round int) time.Duration {
			bodies := make([][]byte, benchEvents/100)
			for k := range bodies {
				evts := make([]map[string]any, 100)
				for j := range evts {
					i := k*100 + j
					evts[j] = map[string]any{"id": fmt.Sprintf("r%d-b%d", round, i), "type": "order.created",
						"data": map[string]any{"order": i, "total": 4200}}
				}
				bodies[k], _ = json.Marshal(map[string]any{"events": evts})
			}
			return deliver(b, rc, func() { sendAll(len(bodies), func(k int) { postBody(b, client, srv.url("/v1/events"), bodies[k]) }) })
		}},
	}
	rates := map[string][]float64{}
	b.ResetTimer()
	for round := range b.N {
		for k := range arms {
			arm := arms[(k+round)%len(arms)]
			took := arm.run(round)
			rates[arm.name] = append(rates[arm.name], benchEvents/took.Seconds())
		}
	}
	b.StopTimer()
	loadRSS := procStatusKiB(b, srv.cmd.Process.Pid, "VmHWM")
	for _, arm := range arms {
		b.ReportMetric(median(rates[arm.name]), arm.name+"-events/s")
	}
	for _, name := range []string{"single", "batch100"} {
		var ratios []float64
		for i := range rates[name] {
			ratios = append(ratios, rates[name][i]/rates["enqueue"][i])
		}
		b.ReportMetric(median(ratios), name+"/enqueue")
	}
	b.ReportMetric(float64(idleRSS)/1024, "rss-idle-MiB")
	b.ReportMetric(float64(loadRSS)/1024, "rss-peak-MiB")
	b.Logf("events/s per round: %v", rates)
	b.ReportMetric(0, "ns/op")
}

// countingReceiver answers every webhook 204 and counts them.
type countingReceiver struct{ n atomic.Int64 }

func (c *countingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	c.n.Add(1)
	w.WriteHeader(http.StatusNoContent)
}

// deliver runs send and returns the time until the receiver has benchEvents more requests.
func deliver(b *testing.B, rc *countingReceiver, send func()) time.Duration {
	from := rc.n.Load()
	began := time.Now()
	send()
	waitFor(b, "the round's deliveries", func() (bool, int64) {
		n := rc.n.Load() - from
		return n >= benchEvents, n
	})
	return time.Since(began)
}

// sendAll calls send(i) for i in [0, n) from benchClients goroutines.
func sendAll(n int, send func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range benchClients {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				send(i)
			}
		})
	}
	wg.Wait()
}

func postBody(b *testing.B, c *http.Client, url string, body []byte) {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b.Errorf("ingest answered %d", resp.StatusCode)
	}
}

// procStatusKiB reads a kB field of /proc/<pid>/status.
func procStatusKiB(b *testing.B, pid int, field string) int64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(b, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(b, err)
			return n
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
