package webhooks

import (
	"context"
	"fmt"
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

// TestLocalDue: the local hint hands out each id once, in the order added, when due; gives back what
// was not leased ahead of the rest; drops ids a scan's read leased; holds no more than its bound.
func TestLocalDue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T, l *localDue)
	}{
		{"due in order, each once", func(t *testing.T, l *localDue) {
			for i := range 5 {
				require.True(t, l.add(1, "wh_a", "d"+strconv.Itoa(i), 100, 100))
			}
			require.True(t, l.add(1, "wh_a", "d0", 100, 100), "an id held already")
			due, _ := l.due(100)
			assert.Equal(t, []dueWebhook{{shard: 1, id: "wh_a"}}, due)
			assert.Equal(t, 5, l.takeable(anyRoom))
			assert.Equal(t, []string{"d0", "d1"}, l.take(1, "wh_a", 2))
			assert.Equal(t, []string{"d2", "d3", "d4"}, l.take(1, "wh_a", 9))
			assert.Empty(t, l.take(1, "wh_a", 9))
			due, next := l.due(100)
			assert.Empty(t, due)
			assert.Zero(t, next)
		}},
		{"later ids come due at their time", func(t *testing.T, l *localDue) {
			require.True(t, l.add(2, "wh_a", "late", 300, 100))
			require.True(t, l.add(2, "wh_b", "soon", 200, 100))
			due, next := l.due(100)
			assert.Empty(t, due)
			assert.EqualValues(t, 200, next)
			due, next = l.due(250)
			assert.Equal(t, []dueWebhook{{shard: 2, id: "wh_b"}}, due)
			assert.EqualValues(t, 300, next)
			assert.Equal(t, []string{"soon"}, l.take(2, "wh_b", 1))
			due, _ = l.due(300)
			assert.Equal(t, []dueWebhook{{shard: 2, id: "wh_a"}}, due)
		}},
		{"given back ahead of the rest", func(t *testing.T, l *localDue) {
			for i := range 4 {
				l.add(0, "wh_a", "d"+strconv.Itoa(i), 1, 1)
			}
			got := l.take(0, "wh_a", 3)
			l.putBack(0, "wh_a", got[1:], 0)
			l.due(1)
			assert.Equal(t, []string{"d1", "d2", "d3"}, l.take(0, "wh_a", 9))
		}},
		{"leased by a read: forgotten", func(t *testing.T, l *localDue) {
			for i := range 3 {
				l.add(0, "wh_a", "d"+strconv.Itoa(i), 1, 1)
			}
			l.forget(0, "wh_a", []string{"d0", "d2", "other"})
			assert.Equal(t, 1, l.takeable(anyRoom))
			assert.Equal(t, []string{"d1"}, l.take(0, "wh_a", 9))
		}},
		{"bounded", func(t *testing.T, l *localDue) {
			for i := range 8 {
				require.True(t, l.add(0, "wh_a", "d"+strconv.Itoa(i), 1, 1))
			}
			assert.False(t, l.add(0, "wh_a", "d8", 1, 1), "full")
			l.take(0, "wh_a", 1)
			assert.True(t, l.add(0, "wh_a", "d8", 1, 1), "room again")
		}},
		{"a queue with due ids is read every localReadEvery", func(t *testing.T, l *localDue) {
			k := dueKey{0, "wh_a"}
			assert.False(t, l.serves(k, 1000), "no ids: read it (at 1000)")
			l.add(0, "wh_a", "d0", 1, 1)
			assert.True(t, l.serves(k, 1000+localReadEvery-1), "read lately: the hint serves")
			assert.False(t, l.serves(k, 1000+localReadEvery), "read it again")
			assert.True(t, l.serves(k, 1000+localReadEvery+1), "read lately")
		}},
		{"takeable within each webhook's room", func(t *testing.T, l *localDue) {
			for i := range 3 {
				l.add(i, "wh_a", "a"+strconv.Itoa(i), 1, 1)
				l.add(i, "wh_b", "b"+strconv.Itoa(i), 1, 1)
			}
			l.due(1)
			room := map[string]int{"wh_a": 2, "wh_b": 0}
			assert.Equal(t, 2, l.takeable(func(id string) int { return room[id] }))
		}},
		{"a parked webhook's ids wait until it may be taken", func(t *testing.T, l *localDue) {
			l.add(0, "wh_a", "d0", 1, 1)
			l.add(0, "wh_a", "d1", 1, 1)
			l.delay(0, "wh_a", 500)
			due, next := l.due(100)
			assert.Empty(t, due)
			assert.EqualValues(t, 500, next)
			assert.Zero(t, l.takeable(anyRoom))
			l.due(500)
			assert.Equal(t, []string{"d0", "d1"}, l.take(0, "wh_a", 9))
		}},
		{"cleared", func(t *testing.T, l *localDue) {
			l.add(0, "wh_a", "d0", 1, 1)
			l.add(0, "wh_a", "d1", 9, 1)
			l.clear()
			due, next := l.due(100)
			assert.Empty(t, due)
			assert.Zero(t, next)
			assert.Zero(t, l.takeable(anyRoom))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newLocalDue(8))
		})
	}
}

// TestLocalDueConcurrent: ids added and taken from many goroutines are each handed out once.
func TestLocalDueConcurrent(t *testing.T) {
	t.Parallel()
	l := newLocalDue(1 << 20)
	const adders, each = 8, 500
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for a := range adders {
		wg.Go(func() {
			for i := range each {
				l.add(i%4, "wh_"+strconv.Itoa(i%3), fmt.Sprintf("d%d-%d", a, i), 0, 0)
			}
		})
		wg.Go(func() {
			for range 4 * each {
				due, _ := l.due(0)
				for _, w := range due {
					for _, id := range l.take(w.shard, w.id, 3) {
						mu.Lock()
						seen[id]++
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	due, _ := l.due(0)
	for _, w := range due {
		for _, id := range l.take(w.shard, w.id, adders*each) {
			seen[id]++
		}
	}
	require.Len(t, seen, adders*each)
	for id, n := range seen {
		require.Equal(t, 1, n, "id %s handed out", id)
	}
}

// TestReadyScoreIsALowerBound: while two replicas deliver to webhooks that fail a share of their
// requests (retries, leases, final outcomes, Enqueue beside Dispatch), every webhook with a delivery in
// a shard's queue has a ready score there no later than that delivery's score (the schedule's
// invariant, schedule.go; checked atomically per shard, over and over); and once everything is
// delivered, the workers leave no ready entry behind.
func TestReadyScoreIsALowerBound(t *testing.T) {
	t.Parallel()
	const hooks = 3
	events := sized(60, 150)
	ctx := context.Background()
	tr := newTestRedis(t)
	var requests atomic.Int64
	var delivered sync.Map // delivery id -> true once a request of it succeeded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1)%4 == 0 { // every 4th request fails: retries
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		delivered.Store(r.Header.Get("webhook-id"), true)
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

// anyRoom is a webhook's room when none is at its cap.
func anyRoom(string) int { return 1 << 30 }
