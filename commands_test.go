package webhooks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/worker"
)

// commandCount is how many commands the test's Redis has run, Lua-inner ones included: miniredis's own
// count, or the sum of a real Redis's INFO commandstats (less the INFO calls that read it). A real
// Redis counts every client's commands, so figures taken while others use it are upper bounds. ok is
// false on a cluster.
func (tr *testRedis) commandCount(t testing.TB) (n int64, ok bool) {
	t.Helper()
	if tr.mini != nil {
		return int64(tr.mini.CommandCount()), true
	}
	stats := tr.commandStats(t)
	for name, calls := range stats {
		if name != "info" {
			n += calls
		}
	}
	return n, stats != nil
}

// commandStats is a real single Redis's calls per command (nil on miniredis or a cluster).
func (tr *testRedis) commandStats(t testing.TB) map[string]int64 {
	t.Helper()
	c, isNode := tr.rdb.(*redis.Client)
	if tr.mini != nil || !isNode {
		return nil
	}
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, found := strings.Cut(strings.TrimSpace(line), ":calls=")
		if found {
			calls, _, _ := strings.Cut(rest, ",")
			out[strings.TrimPrefix(name, "cmdstat_")], _ = strconv.ParseInt(calls, 10, 64)
		}
	}
	return out
}

// countingRedis is the Redis of a test that counts its commands: with a real Redis
// (WEBHOOKS_REDIS_ADDR) and redis-server on PATH, a server of the test's own, since a shared one also
// counts the commands of other packages' tests running beside it (CI saw 105 per delivery through the
// worker, 25 of them HGETs no delivery makes); else the test's Redis (miniredis counts only this test's).
func countingRedis(t *testing.T) *testRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil || os.Getenv("WEBHOOKS_REDIS_ADDR") == "" {
		return newTestRedis(t)
	}
	_, admin := ownRedis(t)
	return &testRedis{rdb: admin, prefix: "wht_count"}
}

// countTries is how many counted rounds commandsPer takes the fewest of: one on miniredis (the test's
// own server, no other client), three on a real Redis, which other tests' commands may share.
func countTries(tr *testRedis) int {
	if tr.mini != nil {
		return 1
	}
	return 3
}

// commandsPer runs work (which makes deliveries deliveries) once uncounted, then tries times, and
// returns the fewest commands per delivery seen: other clients of a shared real Redis can only add to
// a count.
func commandsPer(t *testing.T, tr *testRedis, tries, deliveries int, work func(try int)) float64 {
	t.Helper()
	best := -1.0
	work(tries) // a round uncounted: the per-key first writes (hourly fields, index TTLs) are not per delivery
	for try := range tries {
		before, ok := tr.commandCount(t)
		if !ok {
			t.Skip("commands are counted on miniredis or a single Redis")
		}
		stats := tr.commandStats(t)
		uncounted.Store(0)
		work(try)
		after, _ := tr.commandCount(t)
		after -= uncounted.Load()
		if stats != nil {
			var parts []string
			for name, n := range tr.commandStats(t) {
				if per := float64(n-stats[name]) / float64(deliveries); per >= 0.01 && name != "info" {
					parts = append(parts, fmt.Sprintf("%s %.2f", name, per))
				}
			}
			sort.Strings(parts)
			t.Logf("try %d, per delivery: %s", try, strings.Join(parts, ", "))
		}
		if per := float64(after-before) / float64(deliveries); best < 0 || per < best {
			best = per
		}
	}
	return best
}

// Commands per delivery that TestCommandsPerDelivery allows: regression bounds of its scenarios, in
// which every delivery is alone in its webhook's queue in its shard (200 deliveries over 4 webhooks ×
// 64 shards), so that nothing a queue read, a lease or a retime costs is shared. DESIGN guarantee 2's
// goals (10 inline, 14 through the worker) are judged on the benchmark's load (cmd/webhooks-bench,
// BENCHMARKS.md), where this build counts 7.6 and 13.2 (the schedule's cleanup included). Here, on an
// otherwise idle Redis: inline 9.0-9.3; through the worker alongside Enqueue 16.2-17.3 (a lone
// delivery's queue read and retime, and the cleanup of its ready entry, are its own); a backlog
// drained afterwards 18.3-19.1. Since workers are woken instead of polling (issue 46), on miniredis
// (9.4, 17.2 and 18.5 before): inline 9.8-10.0, at the old bound of 10, by design: each claim of an inline attempt reads the inline zset's head (+0.25 per delivery: one ZRANGE
// per event of 4 deliveries) and, when its lease is that head, wakes the workers with the lease's end
// (+0.25 here, where the inline zsets are mostly empty; rare under load), so that a dead process's
// attempt is taken over when its lease ends; alongside 17.9-18.1; the backlog 19.6-20.0 (each Run's
// start subscribes and reads every shard's inline zset too: +0.3 per delivery of a 200-delivery
// round). On a real Redis: inline 9.65-9.74, alongside 17.7, backlog 19.0-19.1. Run is started
// and idle before the callers of the alongside figure start, as in service: one started during their
// burst reads the burst off the schedule (its first read waits for its subscription), which costs
// about one more command per delivery. The figures include what the worker reads while the test waits
// for the schedule to be clean; the test's clock jumps past the leases' ends once every outcome is
// recorded, and the worker is woken as an Enqueue wakes it, so that wait is one pass, not a lease
// nor the worker's longest sleep (worker.SweepEvery; the test alone took 3.3-10.7 s so, 1.6-2.5 s now).
const (
	// 10.0 before the inline zset's wake (above); 10.5 before the count kept the newest success's
	// answer beside the hourly counts (an HGET and an HSET per count call: docs/delivery.md, "Circuit
	// breaker"): 9.74 then 11.30 on a real Redis, 10.06 then 11.47 on miniredis (11.76 in the whole
	// package's run, fewer counts merged). The worker's figures grew with it: on miniredis, quiet,
	// alongside 18.20-18.89 and the backlog 20.09-20.33 (a real Redis: 17.27, 19.80); with two busy
	// loops on the machine's two cores 19.05 and 20.86, inline 11.65 (fewer counts and passes merge).
	// Each bound is about a command per delivery above what the suite measures on a loaded machine.
	inlineBudget  = 12.5
	workerBudget  = 20.0
	backlogBudget = 22.0
)

// TestCommandsPerDelivery: a delivery to a healthy webhook costs Redis at most inlineBudget commands,
// Lua-inner ones included, when Dispatch makes its attempt inline, at most workerBudget when Enqueue
// leaves it to a Run going meanwhile and backlogBudget when Run drains it afterwards, counted until
// the schedule is clean, with the breaker and hourly stats on, as by default. Each figure is the fewest of
// three runs on a real Redis (others' commands on a shared one only add to it), of one on miniredis; per command on a real Redis with -v.
func TestCommandsPerDelivery(t *testing.T) {
	// Not parallel: the worker figures take in the idle worker's polls while the test waits, and a CPU
	// shared with other tests lengthens the wait.
	const webhooks, events = 4, 50
	tr := countingRedis(t)
	// 8 concurrent callers (below) stay within the default in-flight floor (Concurrency/4 = 16 per
	// webhook), so every first attempt is inline: how the limit treats healthy webhooks is the
	// limit's tests' concern, not this count's.
	// The test's clock jumps over the leases' ends (done, below), so the Timeout need not be short for
	// them to end within the test: 5s (a 10s lease) leaves an inline attempt room to start on a loaded
	// machine (at 1s, calls held there over a second had their attempts deferred for lease margin).
	d := newTestDispatcher(t, tr, Options{BreakAfter: DefaultBreakAfter, Timeout: 5 * time.Second})
	// Real time plus what the test adds.
	clock := &offsetClock{}
	d.now = clock.Now
	rc := newReceiver(t)
	var hooks []string
	for range webhooks {
		hooks = append(hooks, mustCreate(t, d, rc, "x").ID)
	}
	ctx := context.Background()
	_, err := d.Dispatch(ctx, Event{Type: "x", ID: "warm"}) // caches the subscribers, loads the scripts
	require.NoError(t, err)

	// 8 concurrent callers: calls share pipelines, and a call's 4 attempts end close enough together
	// (within worker.SettleLinger) on a loaded machine to share their outcome script, as they do in service.
	const callers = 8
	inline := commandsPer(t, tr, countTries(tr), webhooks*events, func(try int) {
		var wg sync.WaitGroup
		for c := range callers {
			wg.Go(func() {
				for i := c; i < events; i += callers {
					res, err := d.Dispatch(ctx, Event{Type: "x", ID: "in-" + strconv.Itoa(try) + "-" + strconv.Itoa(i)})
					assert.NoError(t, err)
					for _, r := range res {
						assert.NoError(t, r.Err, "attempted inline and recorded")
						assert.Equal(t, StatusSuccess, r.Delivery.Status)
					}
				}
			})
		}
		wg.Wait()
	})

	// Through the worker, counted until the schedule is clean again (no ready entry left: what a
	// lease leaves to correct later is paid within the count). Once every outcome is recorded (no
	// queue holds a delivery: none is leased), the clock jumps past the leases' ends, where the ready
	// entries they left are due, so the worker pays for them at once instead of after a lease's wait.
	done := func(want int) func() bool {
		jumped := false
		return func() bool {
			if !jumped {
				if rc.count() < want || !queuesEmpty(t, tr, d, hooks) {
					return false
				}
				clock.Advance(d.lease + time.Millisecond)
				d.wake.Poke() // as a sleeping worker, which waits for the next due time by the real clock, would not
				jumped = true
			}
			return scheduleClean(t, tr, d)
		}
	}
	backlog := commandsPer(t, tr, countTries(tr), webhooks*events, func(try int) {
		want := rc.count() + webhooks*events
		for i := range events {
			_, err := d.Enqueue(ctx, Event{Type: "x", ID: "wb-" + strconv.Itoa(try) + "-" + strconv.Itoa(i)})
			require.NoError(t, err)
		}
		runUntil(t, d, done(want))
	})
	alongside := commandsPer(t, tr, countTries(tr), webhooks*events, func(try int) {
		want := rc.count() + webhooks*events
		runCtx, stop := context.WithCancel(ctx)
		stopped, idle := make(chan error, 1), make(chan struct{})
		var once sync.Once
		go func() {
			stopped <- runWorker(runCtx, d, worker.Hooks{Idled: func() { once.Do(func() { close(idle) }) }})
		}()
		<-idle // Run is subscribed and has read the schedule once, as in service, before the callers start
		var wg sync.WaitGroup
		for c := range callers {
			wg.Go(func() {
				for i := c; i < events; i += callers {
					_, err := d.Enqueue(ctx, Event{Type: "x", ID: "wa-" + strconv.Itoa(try) + "-" + strconv.Itoa(i)})
					assert.NoError(t, err)
				}
			})
		}
		wg.Wait()
		eventually(t, 30*time.Second, done(want), "delivered, the schedule clean")
		stop()
		require.NoError(t, <-stopped)
	})
	t.Logf("commands per delivery: inline %.2f, worker draining a backlog %.2f, worker alongside Enqueue %.2f", inline, backlog, alongside)
	assert.LessOrEqual(t, inline, inlineBudget, "inline")
	assert.LessOrEqual(t, alongside, workerBudget, "through the worker, alongside Enqueue")
	assert.LessOrEqual(t, backlog, backlogBudget, "through the worker, a thin backlog")
}

// scheduleClean reports whether no shard's ready zset holds an entry. Its commands are not counted
// (uncounted).
func scheduleClean(t *testing.T, tr *testRedis, d *Dispatcher) bool {
	t.Helper()
	keys := make([]string, d.keys.Shards)
	for s := range keys {
		keys[s] = d.keys.Ready(s)
	}
	return zsetsEmpty(tr, keys)
}

// queuesEmpty reports whether no shard's queue of the webhooks holds a delivery (each outcome is
// recorded: none is leased or due). Its commands are not counted (uncounted).
func queuesEmpty(t *testing.T, tr *testRedis, d *Dispatcher, webhooks []string) bool {
	t.Helper()
	var keys []string
	for s := range d.keys.Shards {
		for _, w := range webhooks {
			keys = append(keys, d.keys.Queue(s, w))
		}
	}
	return zsetsEmpty(tr, keys)
}

// zsetsEmpty reports whether every one of keys is an empty zset, in one pipeline of ZCARDs, which
// are not counted (uncounted).
func zsetsEmpty(tr *testRedis, keys []string) bool {
	pipe := tr.rdb.Pipeline()
	cards := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		cards[i] = pipe.ZCard(context.Background(), k)
	}
	_, err := pipe.Exec(context.Background())
	uncounted.Add(int64(len(cards)))
	if err != nil {
		return false
	}
	for _, c := range cards {
		if c.Val() > 0 {
			return false
		}
	}
	return true
}

// offsetClock is real time moved on by what the test adds (Advance): time flows as it does, and a
// test can jump past a lease's end rather than wait for it.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func (c *offsetClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// uncounted is how many commands the test itself sent to Redis during a count (commandsPer).
var uncounted atomic.Int64

// runUntil runs the worker until done holds (within 30s), then stops it and waits for it.
func runUntil(t *testing.T, d *Dispatcher, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- d.Run(ctx) }()
	eventually(t, 30*time.Second, done, "the worker delivers the backlog")
	cancel()
	require.NoError(t, <-stopped)
}
