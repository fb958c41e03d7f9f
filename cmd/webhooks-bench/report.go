package main

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

// per is a/b, NaN when b is 0.
func per(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

func median(xs []float64) float64 {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// metric extracts one figure from a result.
type metric func(r result) float64

var (
	deliveriesPerSec metric = func(r result) float64 { return per(float64(r.fresh.ok), r.fresh.elapsed.Seconds()) }
	dupPerSec        metric = func(r result) float64 {
		if !r.hasRedis {
			return math.NaN()
		}
		return per(float64(r.dup.ok), r.dup.elapsed.Seconds())
	}
	memPerDelivery metric = func(r result) float64 {
		if !r.hasRedis {
			return math.NaN()
		}
		return per(float64(r.fresh.d.memory), float64(r.pairs))
	}
	memUsagePerDelivery metric = func(r result) float64 {
		if !r.hasRedis {
			return math.NaN()
		}
		return per(float64(r.memUsage), float64(r.retained))
	}
	redisCmdsPerDelivery metric = func(r result) float64 {
		if !r.hasRedis {
			return math.NaN()
		}
		return per(float64(r.fresh.d.cmds), float64(r.pairs))
	}
	clientCmdsPerDelivery metric = func(r result) float64 {
		if !r.hasRedis {
			return math.NaN()
		}
		return per(float64(r.fresh.cmds), float64(r.pairs))
	}
	tripsPerDelivery metric = func(r result) float64 {
		if !r.hasRedis {
			return math.NaN()
		}
		return per(float64(r.fresh.trips), float64(r.pairs))
	}
	tripsPerEvent metric = func(r result) float64 {
		if !r.hasRedis {
			return math.NaN()
		}
		return per(float64(r.fresh.trips), float64(r.events))
	}
	dupTripsPerEvent metric = func(r result) float64 {
		if !r.hasRedis {
			return math.NaN()
		}
		return per(float64(r.dup.trips), float64(r.events))
	}
	// selfCPU is the process's CPU: this one's, plus the child's for a child row.
	selfCPU      metric = func(r result) float64 { return per(r.fresh.d.selfSec+r.fresh.childSec, r.fresh.d.dur.Seconds()) }
	redisCPU     metric = func(r result) float64 { return r.fresh.d.redisCPU }
	selfCPUPerDl metric = func(r result) float64 {
		return 1e6 * per(r.fresh.d.selfSec+r.fresh.childSec, float64(r.fresh.ok))
	}
	redisCPUPerDl metric = func(r result) float64 {
		if !r.hasRedis {
			return math.NaN()
		}
		return 1e6 * per(r.fresh.d.redisSec, float64(r.fresh.ok))
	}
)

func med(rs []result, m metric) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = m(r)
	}
	return median(xs)
}

func f0(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return withCommas(int64(math.Round(x)))
}

func f2(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.2f", x)
}

func withCommas(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func report(w io.Writer, cfg config, facts redisFacts, results map[string][]result, background []float64, sampled, badSig int64) {
	order := []string{sysLibrary, sysEnqueue, sysChild, sysV1, sysHand, sysQueue, sysHTTP}
	fmt.Fprintf(w, "## webhooks-bench: %d events × %d webhooks, %d-byte payload, concurrency %d, %d interleaved runs (medians)\n\n",
		cfg.events, cfg.webhooks, cfg.payload, cfg.concurrency, cfg.runs)
	fmt.Fprintf(w, "Redis %s (%s) at %s; Go %s, GOMAXPROCS %d, %d CPUs; background traffic of other Redis clients (INFO commandstats over an idle second before each run) %s commands/s: it inflates the commands and Redis CPU per delivery of a phase by its rate × the phase's length.\n\n",
		facts.version, facts.mode, cfg.redisAddr, runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU(), fmtFloats(background))

	fmt.Fprintln(w, "| system | deliveries/s end to end | duplicate pairs rejected/s | Redis memory per delivery (used_memory Δ) | Redis commands per delivery (commandstats, incl. inside scripts) | client commands per delivery (hook) | round trips per delivery (hook) | round trips per event: fresh / duplicate |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, name := range order {
		rs := results[name]
		if len(rs) == 0 {
			continue
		}
		unit := ""
		if name == sysHTTP {
			unit = " requests/s"
		}
		mem := med(rs, memPerDelivery)
		memS := "—"
		if !math.IsNaN(mem) {
			memS = f0(mem) + " B"
		}
		rt := "—"
		if rs[0].hasRedis {
			rt = f2(med(rs, tripsPerEvent)) + " / " + f2(med(rs, dupTripsPerEvent))
		}
		fmt.Fprintf(w, "| %s | %s%s | %s | %s | %s | %s | %s | %s |\n", name, f0(med(rs, deliveriesPerSec)), unit,
			f0(med(rs, dupPerSec)), memS, f2(med(rs, redisCmdsPerDelivery)), f2(med(rs, clientCmdsPerDelivery)),
			f2(med(rs, tripsPerDelivery)), rt)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Client commands and round trips are counted by a go-redis hook on each system's own client (a pipeline or MULTI/EXEC is one round trip; EVALSHA is one command). Redis commands are the server's INFO commandstats delta over the fresh phase, which counts every EVALSHA and every command a script calls (INFO itself excluded); it also counts other clients of a shared Redis (see background traffic) and, for the library, its retry-worker replica. The library's fresh phase lasts until every pair is delivered: a Dispatch that finds a webhook at its in-flight limit (the engine's own, per Dispatcher: Concurrency/4 at first, more for a webhook that answers fast, inline attempts included) waits for a slot while the webhook keeps answering and otherwise leaves that attempt to the worker, here the retry-worker replica, and the phase waits for it. The Enqueue + worker row enqueues from the same number of goroutines while one Run of the same Dispatcher delivers, until the receiver has answered every pair. Memory is the used_memory delta over the fresh phase ÷ fresh deliveries, measured before anything is deleted (records are retained for the retention period).")
	fmt.Fprintln(w)

	reportRuns(w, results)
	engs := engines(results)
	reportGoals(w, cfg, results)
	if len(engs) > 0 {
		reportEngine(w, cfg, engs)
	}

	fmt.Fprintln(w, "Details (medians of the fresh phase): CPU of the process that ran the system (getrusage: bench driver + loopback receiver + system under test; for a child row the child's, plus this process's, which only waits) and of redis-server (INFO used_cpu_user + used_cpu_sys), in cores and in µs per delivery, and their sum per delivery, the whole system's CPU (the receiver is in the process's figure); MEMORY USAGE summed over the system's keys ÷ retained deliveries (warm-up included), a cross-check unaffected by other clients.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| system | process CPU (cores) | process CPU per delivery | Redis CPU (cores) | Redis CPU per delivery | whole system CPU per delivery | duplicate phase: process / Redis CPU (cores) | MEMORY USAGE per delivery | keys per delivery |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, name := range order {
		rs := results[name]
		if len(rs) == 0 {
			continue
		}
		mu, kpd := "—", "—"
		if rs[0].hasRedis {
			mu = f0(med(rs, memUsagePerDelivery)) + " B"
			kpd = f2(med(rs, func(r result) float64 { return per(float64(r.keys), float64(r.retained)) }))
		}
		redisUs, dupCPU := "—", "—"
		if rs[0].hasRedis {
			redisUs = f0(med(rs, redisCPUPerDl)) + " µs"
			dupCPU = f2(med(rs, func(r result) float64 { return per(r.dup.d.selfSec+r.dup.childSec, r.dup.d.dur.Seconds()) })) + " / " +
				f2(med(rs, func(r result) float64 { return r.dup.d.redisCPU }))
		}
		fmt.Fprintf(w, "| %s | %s | %s µs | %s | %s | %s µs | %s | %s | %s |\n", name, f2(med(rs, selfCPU)), f0(med(rs, selfCPUPerDl)),
			f2(med(rs, redisCPU)), redisUs, f0(med(rs, systemCPUPerDl)), dupCPU, mu, kpd)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Per delivery, from the median run of each system: server commands by name (INFO commandstats, fresh phase), and MEMORY USAGE bytes by kind of key.")
	fmt.Fprintln(w)
	for _, name := range order {
		rs := results[name]
		if len(rs) == 0 || !rs[0].hasRedis {
			continue
		}
		sorted := slices.Clone(rs)
		slices.SortFunc(sorted, func(a, b result) int { return int(deliveriesPerSec(a) - deliveriesPerSec(b)) })
		mid := sorted[len(sorted)/2]
		left := ""
		if name == sysEnqueue {
			left = fmt.Sprintf(" (counted until no ready entry was due; %d entries left, due later, each a queue read and a retime then)", mid.fresh.leftReady)
		}
		fmt.Fprintf(w, "- %s: commands %s%s; memory %s\n", name, topCommands(mid.fresh.d.byCmd, mid.pairs, 20), left,
			memoryByKind(mid.memByKind, mid.retained))
	}
	fmt.Fprintln(w)

	// Correctness of what was measured.
	var notes []string
	for _, name := range order {
		for i, r := range results[name] {
			if r.fresh.failed > 0 {
				notes = append(notes, fmt.Sprintf("%s run %d: %d fresh deliveries did not succeed (first error: %v)", name, i+1, r.fresh.failed, r.fresh.firstErr))
			}
			if r.hasRedis && r.dup.failed > 0 {
				notes = append(notes, fmt.Sprintf("%s run %d: %d pairs of the duplicate phase were not rejected (first error: %v)", name, i+1, r.dup.failed, r.dup.firstErr))
			}
			if r.hasRedis && r.dup.received > 0 {
				notes = append(notes, fmt.Sprintf("%s run %d: the receiver got %d requests during the duplicate phase", name, i+1, r.dup.received))
			}
			if i < len(background) && r.hasRedis {
				if x := background[i] * r.fresh.elapsed.Seconds() / float64(r.pairs); x >= 0.1 {
					notes = append(notes, fmt.Sprintf("%s run %d: other clients' traffic (%s commands/s before the run) may add about %.2f commands per delivery", name, i+1, f0(background[i]), x))
				}
			}
			if r.fresh.received != int64(r.pairs) {
				notes = append(notes, fmt.Sprintf("%s run %d: the receiver got %d requests for %d fresh pairs", name, i+1, r.fresh.received, r.pairs))
			}
		}
	}
	fmt.Fprintf(w, "Checks (each failure is listed below as a WARNING): every fresh pair delivered once with status success, no request during duplicate phases; %d sampled signatures verified with webhooks.Verify, %d failed.\n",
		sampled, badSig)
	for _, g := range engs {
		notes = append(notes, g.notes...)
	}
	for _, n := range notes {
		fmt.Fprintln(w, "- WARNING:", n)
	}
}

// memoryByKind formats MEMORY USAGE by kind of key per delivery, largest first.
func memoryByKind(byKind map[string]int64, deliveries int) string {
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int { return int(byKind[b] - byKind[a]) })
	var parts []string
	for _, k := range kinds {
		if v := float64(byKind[k]) / float64(deliveries); v >= 0.5 {
			parts = append(parts, fmt.Sprintf("%s %.0f B", k, v))
		}
	}
	return strings.Join(parts, ", ")
}

func medEng(gs []*engineResult, m func(*engineResult) float64) float64 {
	xs := make([]float64, len(gs))
	for i, g := range gs {
		xs[i] = m(g)
	}
	return median(xs)
}

// reportEngine prints the engine scenarios' figures run by run.
func reportEngine(w io.Writer, cfg config, gs []*engineResult) {
	bound := float64(cfg.concurrency) / cfg.slowDelay.Seconds()
	fmt.Fprintf(w, "Engine scenarios, run by run. **Hung subscriber**: 4 webhooks (Timeout %s), %d events dispatched from %d goroutines all healthy, then again once webhook 0's handler sleeps %s and its circuit shows open (Health); latency is per Dispatch; healthy deliveries are those to webhooks 1–3, inline or left by Dispatch to the worker (a Run of the same Dispatcher runs throughout), counted until the receiver has answered them all. **Backlog drain**: %d due deliveries (Enqueue, %d webhooks, no worker running: the end-to-end rows' load unless -drain says otherwise), then 1 or 3 Dispatchers' Run, each on its own go-redis client, until the receiver has answered all and the stopped workers have recorded their attempts (order 1, 3 in odd runs, 3, 1 in even ones). **Slow receiver**: %d due deliveries over 16 webhooks, each request answered after %s, one worker with Concurrency %d (each webhook's in-flight limit starts at Concurrency/4, at least Concurrency/16: the 16 webhooks can fill every slot); the bound is %s requests/s.\n\n",
		hungTimeout, cfg.hungEvents, cfg.concurrency, 3*hungTimeout/2, cfg.drain, cfg.webhooks, cfg.slow, cfg.slowDelay, cfg.concurrency, f0(bound))
	fmt.Fprintln(w, "| run | all healthy: p50 / p99 (ms), healthy deliveries/s | one hung: p50 / p99 (ms), healthy deliveries/s | hung ÷ healthy | circuit open after | requests to the hung webhook while measured | drain, 1 replica (deliveries/s) | drain, 3 replicas | 3 ÷ 1 | slow receiver (requests/s) | ÷ bound |")
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	row := func(name string, g *engineResult) {
		fmt.Fprintf(w, "| %s | %.1f / %.1f, %s | %.1f / %.1f, %s | %s | %s | %d | %s | %s | %s | %s | %s |\n", name,
			g.healthyP50, g.healthyP99, f0(g.healthyRate), g.hungP50, g.hungP99, f0(g.hungRate), f2(per(g.hungRate, g.healthyRate)),
			g.openAfter.Round(100*time.Millisecond), g.hungRequests, f0(g.drain1), f0(g.drain3), f2(per(g.drain3, g.drain1)),
			f0(g.slowRate), f2(g.slowRate/bound))
	}
	for i, g := range gs {
		row(fmt.Sprint(i+1), g)
	}
	m := func(f func(*engineResult) float64) float64 { return medEng(gs, f) }
	med := &engineResult{
		healthyP50: m(func(g *engineResult) float64 { return g.healthyP50 }), healthyP99: m(func(g *engineResult) float64 { return g.healthyP99 }),
		healthyRate: m(func(g *engineResult) float64 { return g.healthyRate }),
		hungP50:     m(func(g *engineResult) float64 { return g.hungP50 }), hungP99: m(func(g *engineResult) float64 { return g.hungP99 }),
		hungRate:     m(func(g *engineResult) float64 { return g.hungRate }),
		openAfter:    time.Duration(m(func(g *engineResult) float64 { return float64(g.openAfter) })),
		hungRequests: int64(m(func(g *engineResult) float64 { return float64(g.hungRequests) })),
		drain1:       m(func(g *engineResult) float64 { return g.drain1 }), drain3: m(func(g *engineResult) float64 { return g.drain3 }),
		slowRate: m(func(g *engineResult) float64 { return g.slowRate }),
	}
	row("median", med)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "(The median row's ratios are of the medians; the targets take the median of the per-run ratios.)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Drains, medians over runs: the workers' round trips per delivery (go-redis hook on their clients, Run's polls included), Redis commands per delivery (commandstats, incl. inside scripts), CPU of this process and of Redis (cores) over the drain.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| drain | worker round trips per delivery | Redis commands per delivery | process CPU (cores) | Redis CPU (cores) |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: |")
	for _, k := range []struct{ key, name string }{{"1", "backlog, 1 replica"}, {"3", "backlog, 3 replicas"}, {"slow", "slow receiver, 1 replica"}} {
		st := func(f func(drainStat) float64) float64 {
			return m(func(g *engineResult) float64 {
				if s, ok := g.drainStats[k.key]; ok {
					return f(s)
				}
				return math.NaN()
			})
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", k.name, f2(st(func(s drainStat) float64 { return s.trips })),
			f2(st(func(s drainStat) float64 { return s.cmds })), f2(st(func(s drainStat) float64 { return s.selfCPU })),
			f2(st(func(s drainStat) float64 { return s.redisCPU })))
	}
	fmt.Fprintln(w)
}

func fmtFloats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = f0(x)
	}
	return strings.Join(parts, ", ")
}
