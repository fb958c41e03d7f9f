package webhooks

import (
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkFleet: a fleet of 1,000 webhooks on TLS receivers (one httptest TLS server per 100
// webhooks) that answer after log-normal delays (median 50 ms, p99 500 ms) and time out 1% of the
// time (they hold the request past Timeout). 32 producers enqueue b.N events, each to one webhook in
// turn, with Run going (Concurrency 512), until the receivers have answered every event 2xx. It
// reports attempts/s, over the whole run and in the steady state (from a tenth of the events answered
// to nine tenths), against the bound Concurrency ÷ mean latency (the latencies the receivers drew for
// the attempts made, timeouts counted at Timeout), and the process's heap and goroutines at the end.
// Run with -benchtime=30000x; a real Redis with WEBHOOKS_REDIS_ADDR.
func BenchmarkFleet(b *testing.B) {
	const webhooks, perServer, concurrency, producers = 1000, 100, 512, 32
	const median, p99, timeouts = 50 * time.Millisecond, 500 * time.Millisecond, 0.01
	timeout := time.Second
	sigma := math.Log(float64(p99)/float64(median)) / 2.326 // z of the 99th percentile
	var answered, delivered atomic.Int64
	var drawn atomic.Int64 // the latencies drawn, ns (timeouts at Timeout)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answered.Add(1)
		if rand.Float64() < timeouts {
			drawn.Add(int64(timeout))
			select {
			case <-r.Context().Done():
			case <-time.After(timeout + 500*time.Millisecond):
			}
			return
		}
		d := time.Duration(float64(median) * math.Exp(sigma*rand.NormFloat64()))
		d = min(d, timeout/2)
		drawn.Add(int64(d))
		time.Sleep(d)
		delivered.Add(1)
	})
	pool := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the benchmark's own httptest servers
	var servers []*httptest.Server
	for range webhooks / perServer {
		srv := httptest.NewTLSServer(handler)
		b.Cleanup(srv.Close)
		servers = append(servers, srv)
	}
	tr := newTestRedis(b)
	transport := &http.Transport{TLSClientConfig: pool, MaxIdleConnsPerHost: concurrency, IdleConnTimeout: time.Minute}
	d := newTestDispatcher(b, tr, Options{Concurrency: concurrency, Timeout: timeout,
		RetrySchedule: []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond},
		HTTPClient:    &http.Client{Transport: transport}})
	ctx := context.Background()
	for i := range webhooks {
		srv := servers[i/perServer]
		if _, err := d.Webhooks().Create(ctx, Webhook{URL: fmt.Sprintf("%s/w%d", srv.URL, i), Events: []string{fmt.Sprintf("t%d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(runCtx) }()
	// The producers: 32 goroutines enqueue the events, each to one webhook in turn.
	var next atomic.Int64
	var enqueued sync.WaitGroup
	for range producers {
		enqueued.Go(func() {
			for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
				if _, err := d.Enqueue(ctx, Event{Type: fmt.Sprintf("t%d", i%webhooks), ID: fmt.Sprint("f-", i)}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	// The steady state: from the time a tenth of the attempts were answered to the time nine tenths
	// were, leaving out the start (connections and TLS handshakes) and the tail (the last timeouts
	// and their retries, which wait Timeout and more whatever the throughput).
	var steadyFrom, steadyTo time.Time
	var answeredFrom, answeredTo int64
	deadline := time.Now().Add(10 * time.Minute)
	for delivered.Load() < int64(b.N) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		switch n := delivered.Load(); {
		case steadyFrom.IsZero() && n >= int64(b.N)/10:
			steadyFrom, answeredFrom = time.Now(), answered.Load()
		case steadyTo.IsZero() && n >= int64(b.N)*9/10:
			steadyTo, answeredTo = time.Now(), answered.Load()
		}
	}
	took := time.Since(start)
	enqueued.Wait()
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	goroutines := runtime.NumGoroutine()
	stop()
	<-done
	if delivered.Load() < int64(b.N) {
		b.Fatalf("%d of %d delivered in %s", delivered.Load(), b.N, took)
	}
	attempts := answered.Load()
	meanLatency := time.Duration(drawn.Load() / max(attempts, 1))
	perSec := float64(attempts) / took.Seconds()
	steady := perSec // a run too short to tell a steady state (a smoke run)
	if window := steadyTo.Sub(steadyFrom); !steadyFrom.IsZero() && window > 0 {
		steady = float64(answeredTo-answeredFrom) / window.Seconds()
	}
	bound := float64(concurrency) / meanLatency.Seconds()
	b.ReportMetric(perSec, "attempts/s")
	b.ReportMetric(steady, "steady-attempts/s")
	b.ReportMetric(bound, "bound/s")
	b.ReportMetric(perSec/bound, "of-bound")
	b.ReportMetric(steady/bound, "steady-of-bound")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(goroutines), "goroutines")
	b.ReportMetric(float64(meanLatency.Microseconds())/1000, "mean-latency-ms")
}
