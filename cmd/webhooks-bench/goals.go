package main

// The goals of issue 20 and DESIGN.md (v3, guarantee 2), each judged on the median of per-run ratios
// or figures of one interleaved run.

import (
	"fmt"
	"io"
	"math"
)

// goal is one target and what this run measured for it.
type goal struct {
	name, want string
	got        float64
	ok         func(float64) bool
	format     func(float64) string
}

func atLeast(x float64) func(float64) bool { return func(v float64) bool { return v >= x } }
func atMost(x float64) func(float64) bool  { return func(v float64) bool { return v <= x } }

// ratios are, run by run, a's metric ÷ b's (NaN where a run lacks one of them).
func ratios(a, b []result, m metric) []float64 {
	xs := make([]float64, len(a))
	for i := range a {
		xs[i] = math.NaN()
		if i < len(b) {
			xs[i] = per(m(a[i]), m(b[i]))
		}
	}
	return xs
}

// systemCPUPerDl is the CPU of the whole system per fresh delivery (µs): this process (driver,
// receiver and, for in-process rows, the library), the child process of a child row (its library,
// driver and receiver) and redis-server (INFO used_cpu_user + used_cpu_sys).
var systemCPUPerDl metric = func(r result) float64 {
	return 1e6 * per(r.fresh.d.selfSec+r.fresh.childSec+r.fresh.d.redisSec, float64(r.fresh.ok))
}

// inlineShare is the share of fresh pairs whose first attempt Dispatch made itself.
var inlineShare metric = func(r result) float64 { return 1 - per(float64(r.deferred), float64(r.pairs)) }

func (g goal) verdict() string {
	if math.IsNaN(g.got) {
		return "—"
	}
	if g.ok(g.got) {
		return "PASS"
	}
	return "MISS"
}

// goals are the targets, with the per-run ratios they are the median of.
func goals(cfg config, results map[string][]result) []goal {
	lib, tq := results[sysLibrary], results[sysQueue]
	ratio := func(a, b string, m metric) float64 { return median(ratios(results[a], results[b], m)) }
	lone := func(i int) float64 { return med(lib, func(r result) float64 { return r.loneTrips[i] }) }
	gs := []goal{
		{"end to end: webhooks ÷ task queue", "≥ 3×", ratio(sysLibrary, sysQueue, deliveriesPerSec), atLeast(3), f2},
		{"end to end: webhooks ÷ hand-written loop", "≥ 1.1×", ratio(sysLibrary, sysHand, deliveriesPerSec), atLeast(1.1), f2},
		{"end to end: webhooks ÷ loopback HTTP alone", "≥ 0.45×", ratio(sysLibrary, sysHTTP, deliveriesPerSec), atLeast(0.45), f2},
		{"end to end, the same program in a child process: this tree ÷ v1 (no regression)", "≥ 1.0×", ratio(sysChild, sysV1, deliveriesPerSec), atLeast(1), f2},
		{"duplicate pairs rejected/s: webhooks ÷ task queue", "≥ 3×", median(ratios(lib, tq, dupPerSec)), atLeast(3), f2},
		{"Redis memory per retained delivery (webhooks, used_memory Δ)", "≤ 500 B", med(lib, memPerDelivery), atMost(500), f0},
		{"Redis commands per delivery, inline Dispatch (commandstats, incl. inside scripts)", "≤ 10", med(lib, redisCmdsPerDelivery), atMost(10), f2},
		{"Redis commands per delivery, Enqueue + worker (commandstats, incl. inside scripts)", "≤ 14", med(results[sysEnqueue], redisCmdsPerDelivery), atMost(14), f2},
		{"CPU per delivery, whole system: library process (receiver in it) + Redis (webhooks, inline)", "≤ 60 µs", med(lib, systemCPUPerDl), atMost(60), f0},
		{"CPU per delivery, whole system: webhooks (inline) ÷ loopback HTTP alone", "≤ 1.6×", ratio(sysLibrary, sysHTTP, systemCPUPerDl), atMost(1.6), f2},
		{"first attempts made inline by Dispatch (webhooks, 64 callers × 4 healthy webhooks)", "≥ 99%", 100 * med(lib, inlineShare), atLeast(99), f1},
		{"round trips per fresh Dispatch made alone (hook; amortised under load: " + f2(med(lib, tripsPerEvent)) + ")", "≤ 2", lone(0), atMost(2), f2},
		{"round trips per duplicate Dispatch made alone (hook; amortised under load: " + f2(med(lib, dupTripsPerEvent)) + ")", "≤ 1", lone(1), atMost(1), f2},
		{"deliveries/s: Enqueue + worker ÷ inline Dispatch (the worker keeps up)", "≥ 1.0×", ratio(sysEnqueue, sysLibrary, deliveriesPerSec), atLeast(1), f2},
		{"deliveries/s: a backlog drained by Run (1 replica) ÷ inline Dispatch (the worker drains a backlog at least as fast)", "≥ 1.0×", drainVsInline(results), atLeast(1), f2},
	}
	return append(gs, engineGoals(cfg, engines(results))...)
}

// drainVsInline is the median, over the runs that measured both, of the backlog drain's deliveries/s
// by one replica ÷ the inline Dispatch row's in the same run (NaN when none did).
func drainVsInline(results map[string][]result) float64 {
	var xs []float64
	for i, r := range results[sysEngine] {
		if r.eng != nil && i < len(results[sysLibrary]) {
			xs = append(xs, per(r.eng.drain1, deliveriesPerSec(results[sysLibrary][i])))
		}
	}
	return median(xs)
}

func engines(results map[string][]result) []*engineResult {
	var engs []*engineResult
	for _, r := range results[sysEngine] {
		if r.eng != nil {
			engs = append(engs, r.eng)
		}
	}
	return engs
}

func engineGoals(cfg config, engs []*engineResult) []goal {
	if len(engs) == 0 {
		return nil
	}
	m := func(f func(*engineResult) float64) float64 { return medEng(engs, f) }
	bound := float64(cfg.concurrency) / cfg.slowDelay.Seconds()
	ms := func(x float64) string { return fmt.Sprintf("%.1f ms", x) }
	return []goal{
		{"hung subscriber (circuit open): healthy deliveries/s ÷ all-healthy run", "≥ 0.8", m(func(g *engineResult) float64 { return per(g.hungRate, g.healthyRate) }), atLeast(0.8), f2},
		{"hung subscriber (circuit open): Dispatch p99 latency", "≤ 250 ms", m(func(g *engineResult) float64 { return g.hungP99 }), atMost(250), ms},
		{"backlog drain: 3 replicas ÷ 1 replica, deliveries/s", "≥ 0.9", m(func(g *engineResult) float64 { return per(g.drain3, g.drain1) }), atLeast(0.9), f2},
		{fmt.Sprintf("drain at a %s receiver: requests/s ÷ %s/s (Concurrency %d ÷ %s)", cfg.slowDelay, f0(bound), cfg.concurrency, cfg.slowDelay), "≥ 0.9", m(func(g *engineResult) float64 { return g.slowRate / bound }), atLeast(0.9), f2},
	}
}

// reportRuns prints the figures the goals are judged on, run by run.
func reportRuns(w io.Writer, results map[string][]result) {
	lib := results[sysLibrary]
	cols := []struct {
		name string
		xs   []float64
		f    func(float64) string
	}{
		{"webhooks ÷ task queue", ratios(lib, results[sysQueue], deliveriesPerSec), f2},
		{"÷ hand-written", ratios(lib, results[sysHand], deliveriesPerSec), f2},
		{"÷ loopback HTTP", ratios(lib, results[sysHTTP], deliveriesPerSec), f2},
		{"child: this tree ÷ v1", ratios(results[sysChild], results[sysV1], deliveriesPerSec), f2},
		{"child: whole-system CPU per delivery, this tree ÷ v1", ratios(results[sysChild], results[sysV1], systemCPUPerDl), f2},
		{"in-process ÷ child row (same library)", ratios(lib, results[sysChild], deliveriesPerSec), f2},
		{"Enqueue + worker ÷ inline", ratios(results[sysEnqueue], lib, deliveriesPerSec), f2},
		{"dup/s ÷ task queue", ratios(lib, results[sysQueue], dupPerSec), f2},
		{"first attempts left to the worker", column(lib, func(r result) float64 { return float64(r.deferred) }), f0},
		{"B/delivery", column(lib, memPerDelivery), f0},
		{"commands/delivery inline / Enqueue + worker", nil, nil},
		{"CPU µs/delivery, whole system", column(lib, systemCPUPerDl), f0},
		{"round trips per fresh / dup Dispatch made alone", nil, nil},
	}
	fmt.Fprint(w, "| run |")
	for _, c := range cols {
		fmt.Fprintf(w, " %s |", c.name)
	}
	fmt.Fprint(w, "\n| ---: |")
	for range cols {
		fmt.Fprint(w, " ---: |")
	}
	fmt.Fprintln(w)
	enq := results[sysEnqueue]
	for i := range lib {
		fmt.Fprintf(w, "| %d |", i+1)
		for _, c := range cols {
			switch {
			case c.name == "commands/delivery inline / Enqueue + worker":
				fmt.Fprintf(w, " %s / %s |", f2(redisCmdsPerDelivery(lib[i])), f2(at(enq, i, redisCmdsPerDelivery)))
			case c.f == nil:
				fmt.Fprintf(w, " %s / %s |", f2(lib[i].loneTrips[0]), f2(lib[i].loneTrips[1]))
			default:
				fmt.Fprintf(w, " %s |", c.f(at2(c.xs, i)))
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

func column(rs []result, m metric) []float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = m(r)
	}
	return xs
}

func at(rs []result, i int, m metric) float64 {
	if i < len(rs) {
		return m(rs[i])
	}
	return math.NaN()
}

func at2(xs []float64, i int) float64 {
	if i < len(xs) {
		return xs[i]
	}
	return math.NaN()
}

func f1(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.1f", x)
}

// reportGoals prints the goals with their verdicts.
func reportGoals(w io.Writer, cfg config, results map[string][]result) {
	fmt.Fprintln(w, "| goal (median of per-run ratios or figures) | want | measured | verdict |")
	fmt.Fprintln(w, "| --- | ---: | ---: | --- |")
	for _, g := range goals(cfg, results) {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", g.name, g.want, g.format(g.got), g.verdict())
	}
	fmt.Fprintln(w)
}
