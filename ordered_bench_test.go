package webhooks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkOrderedDispatch: one op is a Dispatch of a new event to one webhook, from 64 callers with
// a worker running, in rounds of 300 that take turns, so that the kinds are measured interleaved on
// the same machine state: unordered; ordered on 1,000 keys (event i on key i mod 1000); and half
// ordered on 1,000 keys, half unordered. A round ends when every delivery of it has succeeded (an
// ordered event that found an earlier one of its key pending is queued behind it and sent by the
// worker). It reports deliveries/s per kind, ordered/unordered (the goal: ≥ 0.8), and the
// mean time of an unordered Dispatch (its inline attempt included) alone and beside ordered traffic.
func BenchmarkOrderedDispatch(b *testing.B) {
	const round = 300
	kinds := []struct {
		name string
		key  func(i int) string
	}{
		{"unordered", func(int) string { return "" }},
		{"ordered", func(i int) string { return "key-" + strconv.Itoa(i%1000) }},
		{"mixed", func(i int) string {
			if i%2 == 0 {
				return ""
			}
			return "key-" + strconv.Itoa(i/2%1000)
		}},
	}
	e := newBenchEnv(b, 1, Options{})
	ctx, stop := context.WithCancel(context.Background())
	var run sync.WaitGroup
	run.Go(func() { _ = e.d.Run(ctx) })
	defer func() { stop(); run.Wait() }()
	e.dispatchAll(b, "pool.created", "warm-", 128, 64, StatusSuccess)
	elapsed, done := make([]time.Duration, len(kinds)), make([]int, len(kinds))
	unorderedNs, unordered := make([]int64, len(kinds)), make([]int64, len(kinds))
	b.ReportAllocs()
	b.ResetTimer()
	for r, next := 0, 0; next < b.N; r++ {
		k, n := r%len(kinds), min(round, b.N-next)
		base, start := e.rcvs[0].count.Load(), time.Now()
		var failed, ns, count atomic.Int64
		var callers sync.WaitGroup
		var op atomic.Int64
		for range 64 {
			callers.Go(func() {
				for i := int(op.Add(1) - 1); i < n; i = int(op.Add(1) - 1) {
					key, t0 := kinds[k].key(done[k]+i), time.Now()
					evt := Event{Type: "pool.created", ID: "evt-" + strconv.Itoa(next+i), OrderKey: key, Data: e.data}
					if _, err := e.d.Dispatch(context.Background(), evt); err != nil {
						failed.Add(1)
					}
					if key == "" {
						ns.Add(int64(time.Since(t0)))
						count.Add(1)
					}
				}
			})
		}
		callers.Wait()
		for deadline := time.Now().Add(time.Minute); e.rcvs[0].count.Load()-base < int64(n) && time.Now().Before(deadline); {
			time.Sleep(100 * time.Microsecond)
		}
		if got := e.rcvs[0].count.Load() - base; failed.Load() > 0 || got != int64(n) {
			b.Fatalf("%s: %d dispatches failed; %d of %d delivered", kinds[k].name, failed.Load(), got, n)
		}
		elapsed[k] += time.Since(start)
		done[k] += n
		unorderedNs[k] += ns.Load()
		unordered[k] += count.Load()
		next += n
	}
	b.StopTimer()
	rate := make([]float64, len(kinds))
	for k, kind := range kinds {
		if elapsed[k] > 0 {
			rate[k] = float64(done[k]) / elapsed[k].Seconds()
			b.ReportMetric(rate[k], kind.name+"-deliveries/s")
		}
		if unordered[k] > 0 {
			b.ReportMetric(float64(unorderedNs[k])/1e6/float64(unordered[k]), kind.name+"-unordered-ms/dispatch")
		}
	}
	if rate[0] > 0 && rate[1] > 0 {
		b.ReportMetric(rate[1]/rate[0], "ordered/unordered")
	}
}

// BenchmarkOrderedOneKey: one op is one delivery of a backlog of events on a single order key, to a
// receiver that takes 5 ms, drained by one worker (Run) started once the backlog is enqueued: each
// delivery is leased only after the previous one's outcome is recorded. ms/delivery against the
// receiver's 5 ms is the cost of the sequence (lease, body, outcome: about one round trip each).
func BenchmarkOrderedOneKey(b *testing.B) {
	var count atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond)
		count.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(srv.Close)
	e := newBenchEnv(b, 0, Options{})
	if _, err := e.d.Webhooks().Create(context.Background(), Webhook{URL: srv.URL, Events: []string{"pool.created"}}); err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		if _, err := e.d.Enqueue(context.Background(), Event{Type: "pool.created", ID: "evt-" + strconv.Itoa(i), OrderKey: "the-key", Data: e.data}); err != nil {
			b.Fatal(err)
		}
	}
	m := &benchMeter{e: e}
	ctx, stop := context.WithCancel(context.Background())
	var run sync.WaitGroup
	b.ResetTimer()
	m.begin(b)
	run.Go(func() { _ = e.d.Run(ctx) })
	for deadline := time.Now().Add(5 * time.Minute); count.Load() < int64(b.N) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
	m.end(b)
	b.StopTimer()
	stop()
	run.Wait()
	if count.Load() != int64(b.N) {
		b.Fatalf("%d of %d delivered", count.Load(), b.N)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/delivery")
	b.ReportMetric(float64(m.trips)/float64(b.N), "roundtrips/op")
}
