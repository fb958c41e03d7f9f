package webhooks

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadyScoreIsALowerBound: while two replicas deliver to webhooks that fail a share of their
// requests (retries, leases, final outcomes, Enqueue beside Dispatch), every webhook with a delivery in
// a shard's queue has a ready score there no later than that delivery's score (the schedule's
// invariant, internal/worker/leaser.go; checked atomically per shard, over and over); and once everything is
// delivered, the workers leave no ready entry behind.
func TestReadyScoreIsALowerBound(t *testing.T) {
	t.Parallel()
	const hooks = 3
	events := sized(60, 150)
	ctx := context.Background()
	tr := newTestRedis(t)
	var requests atomic.Int64
	var delivered sync.Map // delivery id -> true once a request of it succeeded
	var failed sync.Map    // delivery id -> *atomic.Int32, the requests of it answered 500
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("webhook-id")
		n, _ := failed.LoadOrStore(id, new(atomic.Int32))
		// Every 4th request fails (retries), but never a delivery's 4th attempt: with 7 attempts at
		// 1-in-4 odds each, one of 450 deliveries would otherwise run out of retries in about 3% of runs.
		if requests.Add(1)%4 == 0 && n.(*atomic.Int32).Load() < 3 {
			n.(*atomic.Int32).Add(1)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		delivered.Store(id, true)
	}))
	t.Cleanup(srv.Close)
	// Two shards: each webhook's queue holds many deliveries at once, due, leased and retrying.
	opts := Options{BreakAfter: -1, Shards: 2, RetrySchedule: []time.Duration{20 * time.Millisecond, 50 * time.Millisecond,
		50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}, Timeout: time.Second}
	var ds []*Dispatcher
	for range 2 {
		ds = append(ds, newTestDispatcherOn(t, tr.newClient(t), tr, opts))
	}
	for range hooks {
		_, err := ds[0].Webhooks().Create(ctx, Webhook{URL: srv.URL, Events: []string{"x"}})
		require.NoError(t, err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() { assert.NoError(t, d.Run(runCtx)) })
	}
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range events {
			d, evt := ds[i%2], Event{Type: "x", ID: "e" + strconv.Itoa(i)}
			var err error
			if rng.IntN(2) == 0 {
				_, err = d.Enqueue(ctx, evt)
			} else {
				_, err = d.Dispatch(ctx, evt)
			}
			assert.NoError(t, err)
		}
	})
	count := func() (n int) {
		delivered.Range(func(any, any) bool { n++; return true })
		return n
	}
	checks, violations := 0, 0
	for deadline := time.Now().Add(30 * time.Second); count() < events*hooks; {
		require.True(t, time.Now().Before(deadline), "delivered within 30s: %d of %d", count(), events*hooks)
		for s := range ds[0].keys.Shards {
			bad, err := readyInvariantScript.Run(ctx, tr.rdb, []string{ds[0].keys.Ready(s)}, ds[0].keys.Tag(s)+":q:").Int()
			require.NoError(t, err)
			checks++
			violations += bad
		}
	}
	eventually(t, 10*time.Second, func() bool { return scheduleClean(t, tr, ds[0]) }, "no ready entry left behind")
	stop()
	wg.Wait()
	assert.Zero(t, violations, "webhooks with a queue whose ready score is missing or later than its earliest delivery, in %d checks", checks)
	assert.Positive(t, checks)
}

// readyInvariantScript counts, in one shard, the webhooks with a queue whose ready score is missing
// or later than the queue's earliest score (no webhook is parked in the test: the breaker is off and
// no rate limit is set). It finds the shard's queues with KEYS over their prefix: a test's keyspace
// only.
//
// KEYS[1] -> {P:s}:ready
// ARGV[1] -> "{P:s}:q:", the prefix of the shard's queue keys
// returns the number of such webhooks
var readyInvariantScript = redis.NewScript(`
local bad = 0
for _, q in ipairs(redis.call('KEYS', ARGV[1] .. '*')) do
  local wid = string.sub(q, #ARGV[1] + 1)
  local head = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
  if head[2] then
    local r = redis.call('ZSCORE', KEYS[1], wid)
    if not r or tonumber(r) > tonumber(head[2]) then bad = bad + 1 end
  end
end
return bad
`)
