package webhooks

// Benchmarks of the performance budget. They run on a real Redis when WEBHOOKS_REDIS_ADDR is set
// (WEBHOOKS_REDIS_CLUSTER for a cluster) and on embedded miniredis otherwise, as a smoke check only:
// miniredis figures say nothing about Redis. See BENCHMARKS.md.
//
//	WEBHOOKS_REDIS_ADDR=127.0.0.1:6379 go test -run='^$' -bench=. -benchmem
//
// Custom metrics, per benchmark op unless named otherwise:
//
//	deliveries/s (dup-pairs/s)  pairs per second of the timed part, wall clock
//	roundtrips/op               round trips the Dispatcher's client made (a go-redis hook: every Process
//	                            call and every pipeline is one), amortised over concurrent callers
//	client-cmds/op              commands it sent (EVALSHA counts one; a pipeline counts its commands)
//	redis-bytes/delivery        INFO used_memory delta over the timed part (a single real Redis only)
//	allocs/delivery             heap allocations in this process ÷ deliveries: the library, the test's
//	                            loopback receiver (net/http server) and the benchmark loop together

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// benchHook counts what a client sends to Redis.
type benchHook struct {
	passHook
	cmds, trips atomic.Int64
}

func (h *benchHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.trips.Add(1)
		h.cmds.Add(1)
		return next(ctx, cmd)
	}
}
func (h *benchHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.trips.Add(1)
		h.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// benchReceiver is a lean webhook endpoint: it reads the body and answers 204 (or status), keep-alive,
// and records nothing but a count, so that it costs what a fast real receiver costs.
type benchReceiver struct {
	srv    *httptest.Server
	status atomic.Int32
	count  atomic.Int64
	delay  atomic.Int64 // how long it takes to answer (ns)
}

func newBenchReceiver(b *testing.B) *benchReceiver {
	rc := &benchReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if d := rc.delay.Load(); d > 0 {
			time.Sleep(time.Duration(d))
		}
		rc.count.Add(1)
		code := int(rc.status.Load())
		if code == 0 {
			code = http.StatusNoContent
		}
		w.WriteHeader(code)
	}))
	b.Cleanup(rc.srv.Close)
	return rc
}

// benchEvent is the event: 512 bytes of data.
type benchEvent struct {
	PoolID string `json:"pool_id"`
	Owner  string `json:"owner"`
	Region string `json:"region"`
	Note   string `json:"note"`
}

func benchData() benchEvent {
	d := benchEvent{PoolID: "pool_0000000042", Owner: "acct_7f3a9c", Region: "eu-west-1"}
	raw, _ := json.Marshal(d)
	d.Note = strings.Repeat("x", max(0, 512-len(raw)))
	return d
}

// benchEnv is a Dispatcher with W webhooks subscribed to pool.created, each on its own receiver (its own
// host:port, as distinct subscribers are), and a counting hook on its Redis client.
type benchEnv struct {
	tr    *testRedis
	d     *Dispatcher
	hook  *benchHook
	rcvs  []*benchReceiver
	admin redis.UniversalClient // INFO: not counted
	data  benchEvent
}

// benchInlineCap is the in-flight floor of the benchmarks' Dispatchers (setInFlightFloor): more than
// their concurrent callers, so that no attempt is left to the worker.
const benchInlineCap = 256

func newBenchEnv(b *testing.B, w int, opts Options) *benchEnv {
	b.Helper()
	tr := newTestRedis(b)
	e := &benchEnv{tr: tr, hook: &benchHook{}, admin: tr.newClient(b), data: benchData()}
	if opts.Timeout == 0 {
		// The library's default, not the test harness's 2s: its lease (2 × Timeout) must outlast a
		// slow claim reply under 64 callers on a loaded machine, or the inline attempt is left to
		// the worker ("too little of the lease was left").
		opts.Timeout = DefaultTimeout
	}
	e.d = newTestDispatcher(b, tr, opts)
	// These benchmarks measure inline attempts: with the default in-flight floor (Concurrency/4 = 16
	// per webhook, inline attempts included) 64 callers would wait for slots, or see pairs left to the
	// worker (ErrDeferred). cmd/webhooks-bench measures the default, worker included.
	setInFlightFloor(e.d, benchInlineCap)
	for i := range w {
		rc := newBenchReceiver(b)
		events := []string{"pool.created"}
		if i == 0 {
			events = append(events, "pool.single") // selects webhook 0 alone (see BenchmarkWorkerDrain)
		}
		if _, err := e.d.Webhooks().Create(context.Background(), Webhook{URL: rc.srv.URL, Events: events}); err != nil {
			b.Fatal(err)
		}
		e.rcvs = append(e.rcvs, rc)
	}
	tr.rdb.AddHook(e.hook) // after setup: only what the benchmark does is counted
	if c, ok := e.admin.(*redis.Client); ok && tr.mini == nil {
		// Before the harness's own key-by-key cleanup (cleanups run last-in first-out): SCAN + UNLINK
		// in batches, since a benchmark leaves many keys.
		b.Cleanup(func() { benchUnlink(c, "{"+tr.prefix+":*") })
	}
	return e
}

// benchUnlink deletes the keys matching pattern (bounded: at most 100,000 SCAN calls).
func benchUnlink(c *redis.Client, pattern string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var cursor uint64
	for range 100_000 {
		keys, next, err := c.Scan(ctx, cursor, pattern, 2000).Result()
		if err != nil {
			return
		}
		if len(keys) > 0 {
			c.Unlink(ctx, keys...)
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}

func (e *benchEnv) setStatus(code int) {
	for _, rc := range e.rcvs {
		rc.status.Store(int32(code))
	}
}

// dispatchAll dispatches events of type typ with ids prefix0 … prefix<n-1> from callers goroutines, outside
// any timing, and fails unless every pair got the status want.
func (e *benchEnv) dispatchAll(b *testing.B, typ, prefix string, n, callers int, want Status) {
	b.Helper()
	var next atomic.Int64
	var bad atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for range min(callers, n) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				res, err := e.d.Dispatch(context.Background(), Event{Type: typ, ID: prefix + strconv.FormatInt(i, 10), Data: e.data})
				if err != nil {
					bad.Add(1)
					first.CompareAndSwap(nil, err.Error())
					continue
				}
				for _, r := range res {
					if r.Err != nil || r.Delivery == nil || r.Delivery.Status != want {
						bad.Add(1)
						first.CompareAndSwap(nil, fmt.Sprintf("%+v", r))
					}
				}
			}
		})
	}
	wg.Wait()
	if bad.Load() > 0 {
		b.Fatalf("setup: %d pairs not %s; first: %v", bad.Load(), want, first.Load())
	}
}

// usedMemory is INFO used_memory of a single real Redis, or -1.
func (e *benchEnv) usedMemory(b *testing.B) int64 {
	if e.tr.mini != nil || e.tr.isCluster() {
		return -1
	}
	raw, err := e.admin.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(raw, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

// benchMeter adds up the counters over the timed spans of a benchmark.
type benchMeter struct {
	e                           *benchEnv
	trips, cmds, mallocs, bytes int64
	t0, c0, m0, b0              int64
	noMemory                    bool
}

func (m *benchMeter) begin(b *testing.B) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.b0 = m.e.usedMemory(b)
	m.noMemory = m.noMemory || m.b0 < 0
	m.t0, m.c0, m.m0 = m.e.hook.trips.Load(), m.e.hook.cmds.Load(), int64(ms.Mallocs)
}

func (m *benchMeter) end(b *testing.B) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.trips += m.e.hook.trips.Load() - m.t0
	m.cmds += m.e.hook.cmds.Load() - m.c0
	m.mallocs += int64(ms.Mallocs) - m.m0
	if !m.noMemory {
		m.bytes += m.e.usedMemory(b) - m.b0
	}
}

// report reports the custom metrics for ops operations of perOp pairs each.
func (m *benchMeter) report(b *testing.B, ops, perOp int, rateUnit string) {
	pairs := float64(ops * perOp)
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(pairs/s, rateUnit)
	}
	b.ReportMetric(float64(m.trips)/float64(ops), "roundtrips/op")
	b.ReportMetric(float64(m.cmds)/float64(ops), "client-cmds/op")
	if !m.noMemory && rateUnit == "deliveries/s" {
		b.ReportMetric(float64(m.bytes)/pairs, "redis-bytes/delivery")
	}
	b.ReportMetric(float64(m.mallocs)/pairs, "allocs/delivery")
}

// runCallers runs op(i) for i in [0, b.N): in sequence for one caller, otherwise from callers
// goroutines (b.RunParallel with callers/GOMAXPROCS goroutines per P).
func runCallers(b *testing.B, callers int, op func(i int)) {
	if callers == 1 {
		for i := range b.N {
			op(i)
		}
		return
	}
	b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			op(int(next.Add(1) - 1))
		}
	})
}

// benchCallers: one caller gives the round trips of a Dispatch alone; 64 callers, the throughput (the
// library then coalesces concurrent script calls into pipelines, so round trips are amortised).
var benchCallers = []int{1, 64}

// BenchmarkDispatchFresh: one op is a Dispatch of a new event to W webhooks, every first attempt
// succeeding.
func BenchmarkDispatchFresh(b *testing.B) {
	for _, w := range []int{1, 4, 16} {
		b.Run("W="+strconv.Itoa(w), func(b *testing.B) {
			for _, callers := range benchCallers {
				b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
					e := newBenchEnv(b, w, Options{})
					e.dispatchAll(b, "pool.created", "warm-", 2*callers, callers, StatusSuccess) // scripts, connections, cache
					var failed atomic.Int64
					m := &benchMeter{e: e}
					b.ReportAllocs()
					b.ResetTimer()
					m.begin(b)
					runCallers(b, callers, func(i int) {
						res, err := e.d.Dispatch(context.Background(), Event{Type: "pool.created", ID: "evt-" + strconv.Itoa(i), Data: e.data})
						if err != nil || len(res) != w {
							failed.Add(1)
							return
						}
						for _, r := range res {
							if r.Err != nil || r.Duplicate || r.Delivery.Status != StatusSuccess {
								failed.Add(1)
							}
						}
					})
					b.StopTimer()
					m.end(b)
					if failed.Load() > 0 {
						b.Fatalf("%d dispatches or pairs failed", failed.Load())
					}
					m.report(b, b.N, w, "deliveries/s")
				})
			}
		})
	}
}

// BenchmarkDispatchDuplicate: one op is a Dispatch, to 4 webhooks, of an event dispatched before, with
// the timer stopped: b.N events, each dispatched again once, by the Dispatcher that claimed it (it
// remembers the event, as long as two newer ones have not taken its pair of slots, and reads the pairs' records:
// rdb.FindDuplicates), or by another one that never saw it (the claim answers).
func BenchmarkDispatchDuplicate(b *testing.B) {
	const w = 4
	for _, by := range []string{"this", "another"} {
		for _, callers := range benchCallers {
			b.Run("claimed-by="+by+"/callers="+strconv.Itoa(callers), func(b *testing.B) {
				e := newBenchEnv(b, w, Options{})
				d := e.d
				if by == "another" {
					d = newTestDispatcher(b, e.tr, Options{Timeout: DefaultTimeout})
					setInFlightFloor(d, benchInlineCap)
				}
				e.dispatchAll(b, "pool.created", "evt-", b.N, 64, StatusSuccess)
				sent := e.rcvs[0].count.Load()
				var failed atomic.Int64
				m := &benchMeter{e: e}
				b.ReportAllocs()
				b.ResetTimer()
				m.begin(b)
				runCallers(b, callers, func(i int) {
					res, err := d.Dispatch(context.Background(), Event{Type: "pool.created", ID: "evt-" + strconv.Itoa(i), Data: e.data})
					if err != nil || len(res) != w {
						failed.Add(1)
						return
					}
					for _, r := range res {
						if r.Err != nil || !r.Duplicate {
							failed.Add(1)
						}
					}
				})
				b.StopTimer()
				m.end(b)
				if failed.Load() > 0 || e.rcvs[0].count.Load() != sent {
					b.Fatalf("%d pairs not reported duplicate; %d requests sent", failed.Load(), e.rcvs[0].count.Load()-sent)
				}
				m.report(b, b.N, w, "dup-pairs/s")
			})
		}
	}
}

// BenchmarkWorkerDrain: one op is one due retry drained by ProcessDue (leased, attempted with success,
// recorded). The backlog is built with the timer stopped, in batches of up to 10,000 due retries of 4
// webhooks: dispatched against receivers answering 500 (RetrySchedule 1 minute), then made due by the
// test clock. `-benchtime=10000x` drains exactly the 10,000.
func BenchmarkWorkerDrain(b *testing.B) {
	const w, batchMax = 4, 10_000
	e := newBenchEnv(b, w, Options{RetrySchedule: []time.Duration{time.Minute, time.Minute}})
	clock := newTestClock()
	e.d.now = clock.Now
	m := &benchMeter{e: e}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer()
	for done, round := 0, 0; done < b.N; round++ {
		batch := min(b.N-done, batchMax)
		e.setStatus(http.StatusInternalServerError)
		prefix := "r" + strconv.Itoa(round) + "-"
		e.dispatchAll(b, "pool.created", prefix+"evt-", batch/w, 64, StatusPending)
		e.dispatchAll(b, "pool.single", prefix+"one-", batch%w, 64, StatusPending) // webhook 0 only
		e.setStatus(http.StatusNoContent)
		clock.Advance(2 * time.Minute) // past every retry's jittered delay
		b.StartTimer()
		m.begin(b)
		drained := 0
		for pass := 0; drained < batch && pass < batch+100; pass++ {
			n, err := e.d.ProcessDue(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				break
			}
			drained += n
		}
		m.end(b)
		b.StopTimer()
		if drained != batch {
			b.Fatalf("round %d: drained %d of %d due retries", round, drained, batch)
		}
		done += batch
	}
	m.report(b, b.N, 1, "deliveries/s")
}

// BenchmarkResolveSubscribers: one op resolves the subscribers of pool.created with the process-local
// cache emptied first, among 10 or 10,000 registered webhooks of which 4 subscribe.
func BenchmarkResolveSubscribers(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		// Set up once for every b.N the sub-benchmark is run with.
		e := newBenchEnv(b, 4, Options{})
		e.createOthers(b, n-4)
		list, err := e.d.webhooks.subscribers(context.Background(), "", "pool.created")
		if err != nil || len(list) != 4 {
			b.Fatalf("setup: %d subscribers, %v", len(list), err)
		}
		b.Run("webhooks="+strconv.Itoa(n), func(b *testing.B) {
			ctx := context.Background()
			m := &benchMeter{e: e}
			b.ReportAllocs()
			b.ResetTimer()
			m.begin(b)
			for range b.N {
				e.d.webhooks.invalidate()
				if list, err := e.d.webhooks.subscribers(ctx, "", "pool.created"); err != nil || len(list) != 4 {
					b.Fatalf("%d subscribers, %v", len(list), err)
				}
			}
			b.StopTimer()
			m.end(b)
			b.ReportMetric(float64(m.trips)/float64(b.N), "roundtrips/op")
			b.ReportMetric(float64(m.cmds)/float64(b.N), "client-cmds/op")
		})
	}
}

// createOthers registers n webhooks that do not subscribe to pool.created (spread over 100 other
// types, some through wildcards), with Create from 16 goroutines, and checks that they are all listed.
func (e *benchEnv) createOthers(b *testing.B, n int) {
	b.Helper()
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				pattern := fmt.Sprintf("other%d.created", i%100)
				if i%10 == 0 {
					pattern = fmt.Sprintf("other%d.*", i%100)
				}
				if _, err := e.d.Webhooks().Create(context.Background(), Webhook{URL: e.rcvs[0].srv.URL, Events: []string{pattern}}); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		b.Fatalf("setup: %d webhooks not created", failed.Load())
	}
}

// BenchmarkResolveTenant: one op resolves the subscribers of pool.created for one tenant, with the
// process-local cache emptied first, among 10 or 100,000 tenants that each have a webhook subscribed
// to it (written straight into the registry's hashes, as Create would, to keep the setup short).
func BenchmarkResolveTenant(b *testing.B) {
	for _, tenants := range []int{100_000, 10} {
		e := newBenchEnv(b, 0, Options{})
		ctx := context.Background()
		pipe := e.d.rdb.Pipeline()
		for i := range tenants {
			t := "t" + strconv.Itoa(i)
			s := storedWebhook{Webhook: Webhook{ID: "wh_" + t, Tenant: t, URL: "https://example.com/" + t, Secret: "whsec_x",
				Events: []string{"pool.*"}, CreatedAt: time.Now()}}
			raw, _ := json.Marshal(s)
			pipe.HSet(ctx, e.d.keys.Webhooks(), s.ID, raw)
			pipe.HSet(ctx, e.d.keys.TenantSubscribers(t, "pool.*"), s.ID, "")
			pipe.HSet(ctx, e.d.keys.Tenant(t), s.ID, raw)
			if i%1000 == 999 || i == tenants-1 {
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Run("tenants="+strconv.Itoa(tenants), func(b *testing.B) {
			m := &benchMeter{e: e}
			b.ReportAllocs()
			b.ResetTimer()
			m.begin(b)
			for i := range b.N {
				e.d.webhooks.invalidate()
				t := "t" + strconv.Itoa(i%10)
				if list, err := e.d.webhooks.subscribers(ctx, t, "pool.created"); err != nil || len(list) != 1 || list[0].Tenant != t {
					b.Fatalf("tenant %s: %d subscribers, %v", t, len(list), err)
				}
			}
			b.StopTimer()
			m.end(b)
			b.ReportMetric(float64(m.trips)/float64(b.N), "roundtrips/op")
		})
	}
}

// benchTransform is a 3-field transformation of the benchmarks' event (BENCHMARKS.md, "Transformations").
const benchTransform = `{"text": "Pool " + event.data.pool_id + " created", "owner": event.data.owner, "region": event.data.region}`

// BenchmarkDispatchTransform: one op is a Dispatch of a new event to 1 webhook by 64 callers, its first
// attempt succeeding, the webhook with no transformation or with a 3-field one (benchTransform): run
// both, interleaved (-count), to compare deliveries/s.
func BenchmarkDispatchTransform(b *testing.B) {
	for _, tc := range []struct{ name, expr string }{{"none", ""}, {"3-field", benchTransform}} {
		b.Run("transform="+tc.name, func(b *testing.B) {
			e := newBenchEnv(b, 1, Options{})
			ctx := context.Background()
			if tc.expr != "" {
				hooks, err := e.d.Webhooks().List(ctx)
				if err != nil || len(hooks) != 1 {
					b.Fatal(err)
				}
				w := *hooks[0]
				w.Transform = tc.expr
				if _, err := e.d.Webhooks().Update(ctx, w); err != nil {
					b.Fatal(err)
				}
			}
			e.dispatchAll(b, "pool.created", "warm-", 128, 64, StatusSuccess)
			var failed atomic.Int64
			m := &benchMeter{e: e}
			b.ReportAllocs()
			b.ResetTimer()
			m.begin(b)
			runCallers(b, 64, func(i int) {
				res, err := e.d.Dispatch(ctx, Event{Type: "pool.created", ID: "evt-" + strconv.Itoa(i), Data: e.data})
				if err != nil || len(res) != 1 || res[0].Err != nil || res[0].Delivery.Status != StatusSuccess {
					failed.Add(1)
				}
			})
			b.StopTimer()
			m.end(b)
			if failed.Load() > 0 {
				b.Fatalf("%d dispatches failed", failed.Load())
			}
			m.report(b, b.N, 1, "deliveries/s")
		})
	}
}
