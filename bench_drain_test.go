package webhooks

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkBacklogDrain: how fast Run drains a backlog. One op is one delivery of a backlog of b.N
// deliveries (b.N/4 events to 4 webhooks) that Enqueue built with the timer stopped; the timer runs
// from Run's start until every receiver has answered every request. Default Concurrency (64);
// the in-flight floor is benchDrainCap.
//
//   - receiver=50ms: each receiver answers after 50ms. of-ceiling is deliveries/s ÷ (Concurrency / 50ms),
//     the most 64 slots can do (goal ≥ 0.9).
//
//   - receiver=0: loopback receivers answering at once; inline-deliveries/s is the same load dispatched
//     inline by 64 callers (the cap raised so every attempt is inline), and worker/inline the ratio
//     (goal ≥ 1).
//
//     WEBHOOKS_REDIS_ADDR=127.0.0.1:6379 go test -run='^$' -bench=BacklogDrain -benchtime=4000x
func BenchmarkBacklogDrain(b *testing.B) {
	for _, delay := range []time.Duration{50 * time.Millisecond, 0} {
		b.Run("receiver="+delay.String(), func(b *testing.B) {
			const w = 4
			events := max(1, b.N/w)
			e := newBenchEnv(b, w, Options{})
			setInFlightFloor(e.d, benchDrainCap)
			for _, rc := range e.rcvs {
				rc.delay.Store(int64(delay))
			}
			b.ResetTimer()
			rate := drainRate(b, e, e.d, "wk-", events, w)
			b.ReportMetric(rate, "deliveries/s")
			if delay > 0 {
				b.ReportMetric(rate/(float64(DefaultConcurrency)/delay.Seconds()), "of-ceiling")
				return
			}
			setInFlightFloor(e.d, benchInlineCap)
			start := time.Now()
			e.dispatchAll(b, "pool.created", "in-", events, 64, StatusSuccess)
			inline := float64(events*w) / time.Since(start).Seconds()
			b.ReportMetric(inline, "inline-deliveries/s")
			b.ReportMetric(rate/inline, "worker/inline")
		})
	}
}

// BenchmarkBacklogDrainOtherReplica: how fast Run drains a backlog on a replica that did not enqueue it,
// so that it keeps none of its bodies in memory, as BenchmarkBacklogDrain's receiver=0 otherwise: its
// worker reads them in a round trip of its own after each lease. round-trips/delivery and commands/delivery are what the draining replica's client sent.
//
//	WEBHOOKS_REDIS_ADDR=127.0.0.1:6379 go test -run='^$' -bench=BacklogDrainOtherReplica -benchtime=20000x -count=5
func BenchmarkBacklogDrainOtherReplica(b *testing.B) {
	const w = 4
	var opts Options
	e := newBenchEnv(b, w, opts)
	setInFlightFloor(e.d, benchDrainCap)
	opts.Timeout = e.d.opts.Timeout
	c, sent := e.tr.newClient(b), &benchHook{}
	c.AddHook(sent)
	other := newTestDispatcherOn(b, c, e.tr, opts) // the replica that drains, on a client of its own
	setInFlightFloor(other, benchDrainCap)
	events := max(1, b.N/w)
	b.ResetTimer()
	b.ReportMetric(drainRate(b, e, other, "wk-", events, w), "deliveries/s")
	b.ReportMetric(float64(sent.trips.Load())/float64(events*w), "round-trips/delivery")
	b.ReportMetric(float64(sent.cmds.Load())/float64(events*w), "commands/delivery")
}

// drainRate enqueues events events (to w webhooks each) with e's Dispatcher, the timer stopped, then
// runs the worker of run (e's Dispatcher, or another replica's) until every receiver has answered them
// all and returns the deliveries per second of that drain.
func drainRate(b *testing.B, e *benchEnv, run *Dispatcher, prefix string, events, w int) float64 {
	b.StopTimer()
	ctx := context.Background()
	before := make([]int64, len(e.rcvs))
	for i, rc := range e.rcvs {
		before[i] = rc.count.Load()
	}
	for i := range events {
		if _, err := e.d.Enqueue(ctx, Event{Type: "pool.created", ID: prefix + strconv.Itoa(i), Data: e.data}); err != nil {
			b.Fatal(err)
		}
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	b.StartTimer()
	start := time.Now()
	go func() { done <- run.Run(rctx) }()
	deadline := start.Add(5 * time.Minute)
	for i := 0; i < len(e.rcvs); {
		if e.rcvs[i].count.Load()-before[i] >= int64(events) {
			i++
			continue
		}
		if time.Now().After(deadline) {
			b.Fatalf("backlog not drained within 5 minutes")
		}
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return float64(events*w) / elapsed.Seconds()
}

// benchDrainCap is BenchmarkBacklogDrain's in-flight floor (setInFlightFloor): WEBHOOKS_BENCH_DRAIN_CAP,
// or the library's, Concurrency/4. With the default, 4 webhooks' caps add up to Concurrency, so no
// delivery can be leased ahead (it would hold an in-flight slot of its webhook).
var benchDrainCap = func() int {
	if n, err := strconv.Atoi(os.Getenv("WEBHOOKS_BENCH_DRAIN_CAP")); err == nil && n > 0 {
		return n
	}
	return DefaultConcurrency / 4
}()
