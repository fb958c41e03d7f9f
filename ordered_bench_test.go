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

// BenchmarkOrderedDispatch: one op is a Dispatch of a new event to one webhook from 64 callers, with a
// worker running: unordered, or ordered on 1,000 keys (event i on key i mod 1000), or ordered on 1,000
// keys beside as many unordered events (every other op). The timed part ends when every delivery has
// succeeded: an ordered event that found an earlier one of its key pending is queued behind it and
// sent by the worker. deliveries/s is the figure to compare (the goal: ordered ≥ 0.8×
// unordered); unordered-ms/dispatch, the mean time of an unordered Dispatch (its inline attempt
// included), says whether ordered traffic beside it slows it.
func BenchmarkOrderedDispatch(b *testing.B) {
	for _, tc := range []struct {
		name string
		key  func(i int) string
	}{
		{"unordered", func(int) string { return "" }},
		{"keys=1000", func(i int) string { return "key-" + strconv.Itoa(i%1000) }},
		{"keys=1000+unordered", func(i int) string {
			if i%2 == 0 {
				return ""
			}
			return "key-" + strconv.Itoa(i/2%1000)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := newBenchEnv(b, 1, Options{})
			ctx, stop := context.WithCancel(context.Background())
			var run sync.WaitGroup
			run.Go(func() { _ = e.d.Run(ctx) })
			defer func() { stop(); run.Wait() }()
			e.dispatchAll(b, "pool.created", "warm-", 128, 64, StatusSuccess)
			base := e.rcvs[0].count.Load()
			m := &benchMeter{e: e}
			var failed, unordered, unorderedNs atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			m.begin(b)
			runCallers(b, 64, func(i int) {
				key, start := tc.key(i), time.Now()
				_, err := e.d.Dispatch(context.Background(), Event{Type: "pool.created", ID: "evt-" + strconv.Itoa(i), OrderKey: key, Data: e.data})
				if err != nil {
					failed.Add(1)
				}
				if key == "" {
					unordered.Add(1)
					unorderedNs.Add(int64(time.Since(start)))
				}
			})
			for deadline := time.Now().Add(time.Minute); e.rcvs[0].count.Load()-base < int64(b.N) && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			m.end(b)
			b.StopTimer()
			if got := e.rcvs[0].count.Load() - base; failed.Load() > 0 || got != int64(b.N) {
				b.Fatalf("%d dispatches failed; %d of %d delivered", failed.Load(), got, b.N)
			}
			m.report(b, b.N, 1, "deliveries/s")
			if unordered.Load() > 0 {
				b.ReportMetric(float64(unorderedNs.Load())/1e6/float64(unordered.Load()), "unordered-ms/dispatch")
			}
		})
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
