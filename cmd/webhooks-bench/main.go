// Command webhooks-bench runs the workload of the performance issue end to end against a real Redis and
// a loopback receiver, and prints markdown tables comparing, measured in the same run:
//
//  1. webhooks: this library (Dispatch from -concurrency goroutines, a retry worker replica running);
//  2. webhooks: Enqueue + worker (Enqueue from -concurrency goroutines, Run of the same Dispatcher);
//  3. the same end-to-end program (./child) in a child process, built against this tree and against
//     the last v1 commit (-v1), so that a regression against v1 shows within the run;
//  4. hand-written loop: SET claim NX PX → signed POST → HSET record + PEXPIRE (MULTI/EXEC), no schedule;
//  5. task queue: an asynq-style Redis task queue with unique locks, Lua enqueue/dequeue/complete, and
//     -concurrency polling workers;
//  6. loopback HTTP alone: the same signed POSTs, no Redis;
//
// and the engine scenarios (hung subscriber, backlog drain by 1 and 3 replicas, slow receiver). The
// systems run interleaved (A B C …, A B C …, for -runs) and the tables show medians; ratios are
// computed within each run, then their median is taken, and set against the goals of issue 20. Each
// system gets its own key prefix, and its keys are deleted (SCAN + UNLINK) before the next one runs.
//
//	go run ./cmd/webhooks-bench -redis 127.0.0.1:6379 [-events 5000 -webhooks 4 -payload 512 -concurrency 64 -runs 3]
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/cmd/webhooks-bench/internal/e2e"
)

type config struct {
	redisAddr    string
	events       int
	webhooks     int
	payload      int
	concurrency  int
	runs         int
	pool         int
	tqPoll       time.Duration
	phaseTimeout time.Duration
	worker       bool
	retention    time.Duration
	engine       bool
	hungEvents   int
	drain        int
	slow         int
	slowDelay    time.Duration
	only         string
	v1           string
	child        bool
	rotate       bool
	cpuProfile   string
	keepBuilds   bool
}

func main() {
	var cfg config
	flag.StringVar(&cfg.redisAddr, "redis", "127.0.0.1:6379", "address of the Redis to run against (keys under a random prefix, deleted afterwards)")
	flag.IntVar(&cfg.events, "events", 5000, "events per phase")
	flag.IntVar(&cfg.webhooks, "webhooks", 4, "webhooks subscribed to every event")
	flag.IntVar(&cfg.payload, "payload", 512, "bytes of event data (JSON)")
	flag.IntVar(&cfg.concurrency, "concurrency", 64, "goroutines dispatching (and task-queue workers)")
	flag.IntVar(&cfg.runs, "runs", 3, "interleaved runs of every system; the table shows medians")
	flag.IntVar(&cfg.pool, "redis-pool", 0, "go-redis PoolSize of every system's client (default 2×concurrency)")
	flag.DurationVar(&cfg.tqPoll, "tq-poll", 2*time.Millisecond, "task-queue worker sleep when the queue is empty")
	flag.DurationVar(&cfg.phaseTimeout, "phase-timeout", 2*time.Minute, "bound on every phase")
	flag.BoolVar(&cfg.worker, "worker", true, "run a retry-worker replica (Dispatcher.Run, own Redis client) during the library's fresh phase")
	flag.DurationVar(&cfg.retention, "retention", 7*24*time.Hour, "retention of records and claims (all systems)")
	flag.BoolVar(&cfg.engine, "engine", true, "measure the delivery engine: enqueue+worker row, hung subscriber, backlog drain by 1 and 3 replicas, drain at a slow receiver")
	flag.IntVar(&cfg.hungEvents, "hung-events", 2000, "events dispatched in each phase of the hung-subscriber scenario")
	flag.IntVar(&cfg.drain, "drain", 0, "due deliveries of the backlog-drain scenario, spread over -webhooks webhooks (0: -events × -webhooks, the load of the end-to-end rows)")
	flag.IntVar(&cfg.slow, "slow", 1000, "due deliveries of the slow-receiver scenario (16 webhooks)")
	flag.DurationVar(&cfg.slowDelay, "slow-delay", 50*time.Millisecond, "the slow receiver's time per request")
	flag.StringVar(&cfg.only, "only", "", "run only the systems whose name contains one of these (comma-separated; diagnosis: the report's ratios need all)")
	flag.StringVar(&cfg.v1, "v1", "ac27a5b", "also measure the child program built against this version of the library: a directory holding the module, or a git revision of the repository this runs in (\"\": not measured)")
	flag.BoolVar(&cfg.child, "child", true, "also measure the child program built against this tree (the same program as the -v1 row)")
	flag.BoolVar(&cfg.rotate, "rotate", true, "start round r at the r-th system (the engine scenarios stay last), so that no system always runs first or after the same one")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (the in-process systems, the receiver) to this file")
	flag.BoolVar(&cfg.keepBuilds, "keep-builds", false, "keep the child programs' builds (their directory is printed at the end), for a system-wide profiler (perf) to read their symbols")
	flag.Parse()
	if cfg.events < 1 || cfg.webhooks < 1 || cfg.concurrency < 1 || cfg.runs < 1 || cfg.payload < 0 {
		fmt.Fprintln(os.Stderr, "webhooks-bench: -events, -webhooks, -concurrency and -runs must be positive")
		os.Exit(2)
	}
	if cfg.pool == 0 {
		cfg.pool = 2 * cfg.concurrency
	}
	if cfg.drain <= 0 {
		cfg.drain = cfg.events * cfg.webhooks
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "webhooks-bench: cpu profile:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout, os.Stderr, cfg)
	stop()
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "webhooks-bench:", err)
		os.Exit(1)
	}
}

// env is what every system of a run shares.
type env struct {
	cfg    config
	admin  *redis.Client // INFO, SCAN, UNLINK: never counted against a system's round trips
	rcv    *e2e.Receiver
	prefix string // wb<4 random hex digits>
	data   e2e.EventData
	prog   *progress
	tmp    string // the child programs' builds
	// the signatures the children's receivers checked, and the failures
	childSampled, childBadSig atomic.Int64
	// set by a phase's body, read and reset by phase: time not to count in its elapsed time, and the
	// commands it sent itself, by name, not to count against the system (waitScheduleClean)
	untimed   time.Duration
	polls     map[string]int64
	leftReady int64 // ready entries left after the phase, due later (waitScheduleClean)
}

func run(ctx context.Context, out, errOut io.Writer, cfg config) error {
	admin := redis.NewClient(&redis.Options{Addr: cfg.redisAddr})
	defer admin.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := admin.Ping(pctx).Err()
	cancel()
	if err != nil {
		return fmt.Errorf("redis at %s: %w", cfg.redisAddr, err)
	}
	info, err := serverInfo(ctx, admin)
	if err != nil {
		return err
	}
	rcv, err := e2e.StartReceiver(cfg.webhooks)
	if err != nil {
		return err
	}
	defer rcv.Close()

	// Key prefixes are as long as the library's default, "webhooks": "wb", 4 random hex digits, the
	// run and a letter per system.
	var rnd [2]byte
	_, _ = rand.Read(rnd[:])
	e := &env{cfg: cfg, admin: admin, rcv: rcv, prefix: "wb" + hex.EncodeToString(rnd[:]),
		data: e2e.NewEventData(cfg.payload), prog: newProgress(errOut)}
	defer e.prog.stop()
	if e.tmp, err = os.MkdirTemp("", "webhooks-bench-"); err != nil {
		return err
	}
	if cfg.keepBuilds {
		defer fmt.Fprintln(errOut, "webhooks-bench: the child programs' builds are kept in", e.tmp)
	} else {
		defer os.RemoveAll(e.tmp)
	}
	defer func() {
		// Whatever happened, leave no key of ours behind.
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, pattern := range []string{"{" + e.prefix + "*", e.prefix + "*"} {
			if n, err := deleteKeys(cctx, admin, pattern); err != nil {
				fmt.Fprintf(errOut, "webhooks-bench: cleanup of %s: %v (%d keys deleted)\n", pattern, err, n)
			}
		}
	}()

	systems, err := e.systems(ctx)
	if err != nil {
		return err
	}
	if cfg.only != "" {
		systems = slices.DeleteFunc(systems, func(s system) bool {
			for o := range strings.SplitSeq(cfg.only, ",") {
				if strings.Contains(s.name, o) {
					return false
				}
			}
			return true
		})
	}
	results := map[string][]result{}
	var background []float64
	var loads []string
	for r := 1; r <= cfg.runs; r++ {
		loads = append(loads, loadAverage())
		bg, err := backgroundRate(ctx, admin, time.Second)
		if err != nil {
			return err
		}
		background = append(background, bg)
		shared := newBaselineClient(cfg)
		for _, s := range roundOrder(systems, r, cfg.rotate) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			e.prog.set(fmt.Sprintf("run %d/%d %s", r, cfg.runs, s.name), nil, 0)
			res, err := s.run(ctx, e, r, shared)
			if err != nil {
				return fmt.Errorf("run %d, %s: %w", r, s.name, err)
			}
			res.system = s.name
			results[s.name] = append(results[s.name], res)
		}
		shared.CloseIdleConnections()
	}
	e.prog.stop()
	loads = append(loads, loadAverage())
	fmt.Fprintf(out, "Load average (1, 5, 15 min) at the start of each run, then at the end: %s.\n\n", strings.Join(loads, "; "))
	report(out, cfg, info, results, background, rcv.Sampled.Load()+e.childSampled.Load(), rcv.BadSig.Load()+e.childBadSig.Load())
	if f := rcv.BadSig.Load() + e.childBadSig.Load(); f > 0 {
		return errors.New("some sampled requests failed signature verification")
	}
	return nil
}

// systems are the rows and scenarios of a run, in the order they run; the child programs are built
// first.
func (e *env) systems(ctx context.Context) ([]system, error) {
	cfg := e.cfg
	systems := []system{{name: sysLibrary, run: runLibrary}}
	if cfg.engine {
		systems = append(systems, system{name: sysEnqueue, run: runEnqueue})
	}
	if cfg.child || cfg.v1 != "" {
		e.prog.set("building the child program(s)", nil, 0)
		current, old, err := buildChildren(ctx, e.tmp, cfg.v1)
		if err != nil {
			return nil, err
		}
		if cfg.child {
			systems = append(systems, system{name: sysChild, run: runChild(current, "c")})
		}
		if old != "" {
			systems = append(systems, system{name: sysV1, run: runChild(old, "v")})
		}
	}
	systems = append(systems, system{name: sysHand, run: runHandWritten}, system{name: sysQueue, run: runTaskQueue},
		system{name: sysHTTP, run: runHTTPOnly})
	if cfg.engine {
		systems = append(systems, system{name: sysEngine, run: runEngine})
	}
	return systems, nil
}

// roundOrder is the order of round r (from 1): with rotate, the rows rotated left by r-1, the engine
// scenarios last.
func roundOrder(systems []system, r int, rotate bool) []system {
	var rows, rest []system
	for _, s := range systems {
		if s.name == sysEngine {
			rest = append(rest, s)
		} else {
			rows = append(rows, s)
		}
	}
	if rotate && len(rows) > 0 {
		k := (r - 1) % len(rows)
		rows = append(rows[k:len(rows):len(rows)], rows[:k]...)
	}
	return append(rows, rest...)
}

type system struct {
	name string
	run  func(ctx context.Context, e *env, run int, shared *http.Client) (result, error)
}

const (
	sysLibrary = "webhooks (this library)"
	sysHand    = "hand-written loop"
	sysQueue   = "task queue (asynq-style)"
	sysHTTP    = "loopback HTTP alone"
	sysEnqueue = "webhooks: Enqueue + worker"
	sysEngine  = "engine scenarios"
	// sysChild and sysV1 are the same program (./child) in a child process, built against this tree
	// and against -v1.
	sysChild = "webhooks, child process (same program as v1's row)"
	sysV1    = "v1 (-v1, default ac27a5b), child process"
)

// loadAverage is the machine's load average, from /proc/loadavg ("?" where there is none).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}
