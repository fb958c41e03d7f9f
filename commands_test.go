package webhooks

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		work(try)
		after, _ := tr.commandCount(t)
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

// Commands per delivery that TestCommandsPerDelivery allows. DESIGN guarantee 2's goals are 10 inline
// and 14 through the worker; this build counts 10.4-10.8 and 22.6-23.3 (19 and 32 before). Of the
// inline count, about 2.3 commands are the outcome script's per-shard health hash, which the circuit
// breaker's rewrite removes (issue 20): then tighten inlineBudget to 10. The worker's count is the
// claim (about 5), the lease (scan, queue read, lease script: about 8) and the outcome (about 8 with
// the health hash).
const (
	inlineBudget = 11.0
	workerBudget = 25.0
)

// TestCommandsPerDelivery: a delivery to a healthy webhook costs Redis at most inlineBudget commands,
// Lua-inner ones included, when Dispatch makes its attempt inline, and at most workerBudget when Enqueue
// leaves it to Run, with the breaker and hourly stats on, as by default. Each figure is the fewest of
// three runs (others' commands on a shared Redis only add to it); per command on a real Redis with -v.
func TestCommandsPerDelivery(t *testing.T) {
	const webhooks, events = 4, 50
	tr := newTestRedis(t)
	// The in-flight cap is raised so that every first attempt of 50 concurrent calls is inline: how
	// the cap treats healthy webhooks is the breaker's tests' concern, not this count's.
	d := newTestDispatcher(t, tr, Options{BreakAfter: DefaultBreakAfter, MaxInFlightPerWebhook: 1024})
	rc := newReceiver(t)
	for range webhooks {
		mustCreate(t, d, rc, "x")
	}
	ctx := context.Background()
	_, err := d.Dispatch(ctx, Event{Type: "x", ID: "warm"}) // caches the subscribers, loads the scripts
	require.NoError(t, err)

	// 8 concurrent callers: calls share pipelines, and a call's 4 attempts end close enough together
	// (within settleLinger) on a loaded machine to share their outcome script, as they do in service.
	const callers = 8
	inline := commandsPer(t, tr, 3, webhooks*events, func(try int) {
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

	worker := commandsPer(t, tr, 3, webhooks*events, func(try int) {
		want := rc.count() + webhooks*events
		for i := range events {
			_, err := d.Enqueue(ctx, Event{Type: "x", ID: "wk-" + strconv.Itoa(try) + "-" + strconv.Itoa(i)})
			require.NoError(t, err)
		}
		runUntil(t, d, func() bool { return rc.count() >= want })
	})
	t.Logf("commands per delivery: inline %.2f, worker %.2f", inline, worker)
	assert.LessOrEqual(t, inline, inlineBudget, "inline")
	assert.LessOrEqual(t, worker, workerBudget, "through the worker")
}

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
