package main

// The delivery engine's figures: Enqueue with a worker in the same process (a system row, compared
// with the inline Dispatch row of the same run), and three scenarios: a hung subscriber behind its open
// circuit, a backlog drained by 1 and by 3 replicas, and a drain at a receiver that takes 50 ms per
// request.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"

	"github.com/smartdrop/webhooks/cmd/webhooks-bench/internal/e2e"
)

// scenarioReceiver is a loopback receiver with one listener per webhook, each answering 204 after its
// own delay (0: at once). A request whose client gives up (timeout) ends its wait.
type scenarioReceiver struct {
	srvs   []*http.Server
	urls   []string
	count  atomic.Int64
	counts []atomic.Int64 // by listener
	delays []atomic.Int64 // ns, by listener
}

func startScenarioReceiver(n int) (*scenarioReceiver, error) {
	rc := &scenarioReceiver{counts: make([]atomic.Int64, n), delays: make([]atomic.Int64, n)}
	var err error
	if rc.srvs, rc.urls, err = e2e.Serve(n, rc.handler); err != nil {
		return nil, err
	}
	return rc, nil
}

func (rc *scenarioReceiver) handler(i int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.counts[i].Add(1)
		if d := time.Duration(rc.delays[i].Load()); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		rc.count.Add(1) // answered
		w.WriteHeader(http.StatusNoContent)
	})
}

func (rc *scenarioReceiver) setDelay(i int, d time.Duration) { rc.delays[i].Store(int64(d)) }

func (rc *scenarioReceiver) close() {
	for _, s := range rc.srvs {
		_ = s.Close()
	}
}

// waitCount waits until count() ≥ target, polling every millisecond, within ctx. It returns when it saw
// the target reached.
func waitCount(ctx context.Context, count func() int64, target int64) (time.Time, error) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		if count() >= target {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Now(), fmt.Errorf("%d of %d delivered: %w", count(), target, ctx.Err())
		case <-t.C:
		}
	}
}

// workers runs Run of k Dispatchers, each on its own go-redis client, and stops them.
type workers struct {
	cancel  context.CancelFunc
	stopped sync.WaitGroup
	clients []*redis.Client
	ds      []*webhooks.Dispatcher
	ctr     e2e.Counter // round trips of all k clients
}

func startWorkers(ctx context.Context, cfg config, opts webhooks.Options, k int) (*workers, error) {
	wctx, cancel := context.WithCancel(ctx)
	w := &workers{cancel: cancel}
	for range k {
		rdb := redis.NewClient(&redis.Options{Addr: cfg.redisAddr, PoolSize: cfg.pool})
		rdb.AddHook(&w.ctr)
		w.clients = append(w.clients, rdb)
		d, err := webhooks.New(rdb, opts)
		if err != nil {
			w.stop()
			return nil, err
		}
		w.ds = append(w.ds, d)
	}
	for _, d := range w.ds {
		w.stopped.Go(func() { _ = d.Run(wctx) })
	}
	return w, nil
}

// stop ends every Run (each returns once its attempts in flight are recorded), within 30 s.
func (w *workers) stop() {
	w.cancel()
	done := make(chan struct{})
	go func() { w.stopped.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
	for _, d := range w.ds {
		d.CloseIdleConnections()
	}
	for _, c := range w.clients {
		c.Close()
	}
}

// engineResult is what the engine scenarios measured in one run.
type drainStat struct {
	trips, cmds, selfCPU, redisCPU float64
}

type engineResult struct {
	// hung subscriber: Dispatch latency and deliveries/s to the three healthy webhooks, all healthy
	// and then with the fourth hung behind its open circuit
	healthyP50, healthyP99, healthyRate float64
	hungP50, hungP99, hungRate          float64
	openAfter                           time.Duration // until Health showed the circuit open
	hungRequests                        int64         // requests the hung listener got while measured
	// backlog drain by 1 and 3 replicas
	drain1, drain3 float64 // deliveries/s
	// per drain (by replicas: 1, 3, and the slow receiver's): the workers' round trips and Redis
	// commands (commandstats) per delivery, and CPU (cores) of this process and of Redis
	drainStats map[string]drainStat
	// drain at a slow receiver
	slowRate float64
	notes    []string
}

// runEngine runs the scenarios of one run.
func runEngine(ctx context.Context, e *env, run int, _ *http.Client) (result, error) {
	eng := &engineResult{drainStats: map[string]drainStat{}}
	res := result{eng: eng}
	label := fmt.Sprintf("run %d/%d engine", run, e.cfg.runs)
	if err := e.hungScenario(ctx, label, fmt.Sprintf("%s%dg", e.prefix, run), eng); err != nil {
		return res, fmt.Errorf("hung subscriber: %w", err)
	}
	order := []int{1, 3}
	if run%2 == 0 {
		order = []int{3, 1}
	}
	for _, k := range order {
		rate, err := e.drainScenario(ctx, label, fmt.Sprintf("%s%dr%d", e.prefix, run, k), k, eng)
		if err != nil {
			return res, fmt.Errorf("drain with %d replicas: %w", k, err)
		}
		if k == 1 {
			eng.drain1 = rate
		} else {
			eng.drain3 = rate
		}
	}
	rate, err := e.slowScenario(ctx, label, fmt.Sprintf("%s%ds", e.prefix, run), eng)
	if err != nil {
		return res, fmt.Errorf("slow receiver: %w", err)
	}
	eng.slowRate = rate
	return res, nil
}

const hungTimeout = 2 * time.Second

// hungScenario: 4 webhooks; Dispatch of -hung-events events from -concurrency goroutines, all
// healthy; then webhook 0's handler sleeps past Timeout (2 s), a few events are dispatched until its
// circuit shows open, and the same number of events is dispatched again.
func (e *env) hungScenario(ctx context.Context, label, prefix string, eng *engineResult) error {
	cfg := e.cfg
	defer e.cleanup("{" + prefix + ":*")
	rc, err := startScenarioReceiver(4)
	if err != nil {
		return err
	}
	defer rc.close()
	rdb := redis.NewClient(&redis.Options{Addr: cfg.redisAddr, PoolSize: cfg.pool})
	defer rdb.Close()
	d, err := webhooks.New(rdb, webhooks.Options{KeyPrefix: prefix, AllowPrivateNetworks: true,
		Retention: cfg.retention, Timeout: hungTimeout})
	if err != nil {
		return err
	}
	defer d.CloseIdleConnections()
	ids := make([]string, len(rc.urls))
	for i, u := range rc.urls {
		wh, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: u, Events: []string{e2e.EventType}})
		if err != nil {
			return err
		}
		ids[i] = wh.ID
	}
	hung := ids[0]
	// A worker in the same process, as in production: Dispatch leaves to it the attempts of a webhook
	// at its in-flight limit (the engine's own, Concurrency/4 = 16 by default at first, inline attempts
	// included), which 64 concurrent callers reach.
	wctx, stopRun := context.WithCancel(ctx)
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = d.Run(wctx) }()
	defer func() {
		stopRun()
		select {
		case <-runDone:
		case <-time.After(30 * time.Second):
		}
	}()
	healthyCount := func() int64 { return rc.counts[1].Load() + rc.counts[2].Load() + rc.counts[3].Load() }

	// measure dispatches n events and returns the latencies (ms) and the deliveries to the webhooks
	// other than the hung one, per second: those made inline and those Dispatch left to the worker,
	// until the receiver has answered them all.
	measure := func(what, idPrefix string, n int, wantHungParked bool) (p50, p99, rate float64, err error) {
		pctx, cancel := context.WithTimeout(ctx, cfg.phaseTimeout)
		defer cancel()
		var done atomic.Int64
		e.prog.set(label+" "+what, &done, n)
		lat := make([]float64, n)
		var ok atomic.Int64
		var bad atomic.Int64
		var firstBad atomic.Pointer[error]
		start, h0 := time.Now(), healthyCount()
		_, err = e2e.Parallel(pctx, n, cfg.concurrency, &done, func(ctx context.Context, i int) error {
			t0 := time.Now()
			results, err := d.Dispatch(ctx, webhooks.Event{Type: e2e.EventType, ID: e2e.EventID(idPrefix, i), Data: e.data})
			lat[i] = float64(time.Since(t0).Microseconds()) / 1000
			if err != nil {
				return err
			}
			for _, r := range results {
				switch {
				case r.WebhookID == hung && wantHungParked:
					if r.Delivery == nil || r.Delivery.Status != webhooks.StatusPending {
						bad.Add(1)
						err := fmt.Errorf("hung webhook's delivery not parked: %+v", r)
						firstBad.CompareAndSwap(nil, &err)
					}
				case r.Err == nil && r.Delivery != nil && r.Delivery.Status == webhooks.StatusSuccess,
					errors.Is(r.Err, webhooks.ErrDeferred) && r.Delivery != nil && r.Delivery.Status == webhooks.StatusPending:
					if r.WebhookID != hung {
						ok.Add(1)
					}
				default:
					bad.Add(1)
					err := fmt.Errorf("webhook %s: %v", r.WebhookID, r.Err)
					firstBad.CompareAndSwap(nil, &err)
				}
			}
			return nil
		})
		if err != nil {
			return 0, 0, 0, err
		}
		if _, err := waitCount(pctx, func() int64 { return healthyCount() - h0 }, ok.Load()); err != nil {
			return 0, 0, 0, err
		}
		elapsed := time.Since(start)
		if b := bad.Load(); b > 0 {
			eng.notes = append(eng.notes, fmt.Sprintf("hung scenario, %s: %d targets not as expected (first: %v)", what, b, *firstBad.Load()))
		}
		slices.Sort(lat)
		return percentile(lat, 0.50), percentile(lat, 0.99), float64(ok.Load()) / elapsed.Seconds(), nil
	}
	n := cfg.hungEvents
	if _, _, _, err := measure("warm-up", prefix+"-warm", e.warmups(), false); err != nil {
		return err
	}
	if eng.healthyP50, eng.healthyP99, eng.healthyRate, err = measure("all healthy", prefix+"-ok-", n, false); err != nil {
		return err
	}

	// Hang webhook 0 and open its circuit: rounds of 8 concurrent Dispatches (each waits out the 2 s
	// timeout) until Health shows it open; at most 10 rounds.
	rc.setDelay(0, 3*hungTimeout/2)
	e.prog.set(label+" opening the hung webhook's circuit", nil, 0)
	t0 := time.Now()
	opened := false
	for round := range 10 {
		_, _ = e2e.Parallel(ctx, 8, 8, nil, func(ctx context.Context, i int) error {
			_, err := d.Dispatch(ctx, webhooks.Event{Type: e2e.EventType, ID: e2e.EventID(fmt.Sprintf("%s-o%02d-", prefix, round), i), Data: e.data})
			return err
		})
		h, err := d.Webhooks().Health(ctx, hung)
		if err != nil {
			return err
		}
		if h.State == webhooks.CircuitOpen {
			opened = true
			break
		}
	}
	eng.openAfter = time.Since(t0)
	if !opened {
		return errors.New("the hung webhook's circuit did not open within 10 rounds")
	}
	r0 := rc.counts[0].Load()
	if eng.hungP50, eng.hungP99, eng.hungRate, err = measure("one hung (circuit open)", prefix+"-hung-", n, true); err != nil {
		return err
	}
	eng.hungRequests = rc.counts[0].Load() - r0
	return nil
}

// percentile of sorted xs (nearest rank).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(float64(len(xs))*p+0.5) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// drainScenario: -drain due deliveries (Enqueue, -webhooks webhooks, no worker running), then k Dispatchers'
// Run, each with its own client, until every one is delivered; deliveries/s.
func (e *env) drainScenario(ctx context.Context, label, prefix string, k int, eng *engineResult) (float64, error) {
	cfg := e.cfg
	hooks := cfg.webhooks
	events := (cfg.drain + hooks - 1) / hooks
	rc, err := startScenarioReceiver(hooks)
	if err != nil {
		return 0, err
	}
	defer rc.close()
	opts := webhooks.Options{KeyPrefix: prefix, AllowPrivateNetworks: true, Retention: cfg.retention}
	return e.drain(ctx, fmt.Sprintf("%s drain, %d replica(s)", label, k), fmt.Sprint(k), prefix, rc, opts, k,
		func(i int) string { return e2e.EventType }, []string{e2e.EventType}, events, eng)
}

// slowScenario: -slow due deliveries spread over 16 webhooks (one event type each), a receiver that
// takes -slow-delay per request, one worker with Concurrency -concurrency (each webhook's in-flight
// limit, Concurrency/4 at first, is at least Concurrency/16: the 16 webhooks can fill every slot);
// requests/s.
func (e *env) slowScenario(ctx context.Context, label, prefix string, eng *engineResult) (float64, error) {
	cfg := e.cfg
	const hooks = 16
	rc, err := startScenarioReceiver(hooks)
	if err != nil {
		return 0, err
	}
	defer rc.close()
	for i := range hooks {
		rc.setDelay(i, cfg.slowDelay)
	}
	types := make([]string, hooks)
	for i := range types {
		types[i] = fmt.Sprintf("slow.t%02d", i)
	}
	opts := webhooks.Options{KeyPrefix: prefix, AllowPrivateNetworks: true, Retention: cfg.retention,
		Concurrency: cfg.concurrency}
	return e.drain(ctx, label+" drain at a slow receiver", "slow", prefix, rc, opts, 1,
		func(i int) string { return types[i%hooks] }, nil, cfg.slow, eng)
}

// drain creates one webhook per listener of rc (subscribed to every, or to typeOf(i) when every is
// nil), enqueues n events (event i of type typeOf(i)) with no worker running, then times k replicas'
// Run until the receiver has answered every delivery and the replicas, stopped then, have recorded
// their attempts in flight. It checks that no delivery was sent twice.
func (e *env) drain(ctx context.Context, label, key, prefix string, rc *scenarioReceiver, opts webhooks.Options, k int,
	typeOf func(i int) string, every []string, n int, eng *engineResult) (float64, error) {
	cfg := e.cfg
	defer e.cleanup("{" + prefix + ":*")
	rdb := redis.NewClient(&redis.Options{Addr: cfg.redisAddr, PoolSize: cfg.pool})
	defer rdb.Close()
	producer, err := webhooks.New(rdb, opts)
	if err != nil {
		return 0, err
	}
	defer producer.CloseIdleConnections()
	for i, u := range rc.urls {
		events := every
		if events == nil {
			events = []string{typeOf(i)}
		}
		if _, err := producer.Webhooks().Create(ctx, webhooks.Webhook{URL: u, Events: events}); err != nil {
			return 0, err
		}
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.phaseTimeout)
	defer cancel()
	var done atomic.Int64
	e.prog.set(label+": enqueue", &done, n)
	var pairs atomic.Int64
	if _, err := e2e.Parallel(pctx, n, cfg.concurrency, &done, func(ctx context.Context, i int) error {
		results, err := producer.Enqueue(ctx, webhooks.Event{Type: typeOf(i), ID: e2e.EventID(prefix+"-evt-", i), Data: e.data})
		pairs.Add(int64(len(results)))
		return err
	}); err != nil {
		return 0, err
	}
	want := pairs.Load()
	if got := rc.count.Load(); got != 0 {
		return 0, fmt.Errorf("%d requests before any worker ran", got)
	}
	e.prog.set(label, nil, 0)
	a, err := takeSnapshot(ctx, e.admin)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	w, err := startWorkers(pctx, cfg, opts, k)
	if err != nil {
		return 0, err
	}
	_, werr := waitCount(pctx, rc.count.Load, want)
	w.stop()
	elapsed := time.Since(start)
	if werr != nil {
		return 0, werr
	}
	if b, err := takeSnapshot(ctx, e.admin); err == nil {
		dd := diff(a, b)
		_, trips := w.ctr.Read()
		eng.drainStats[key] = drainStat{trips: float64(trips) / float64(want), cmds: float64(dd.cmds) / float64(want),
			selfCPU: dd.selfCPU, redisCPU: dd.redisCPU}
	}
	if got := rc.count.Load(); got != want {
		eng.notes = append(eng.notes, fmt.Sprintf("%s: the receiver answered %d requests for %d deliveries", label, got, want))
	}
	return float64(want) / elapsed.Seconds(), nil
}
