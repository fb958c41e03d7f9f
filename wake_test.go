package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/worker"
)

// runIdleWorkers runs Run on each of ds with its sweep off (an hour: what they attempt, a wake or a
// known due time made them), and returns once each has gone idle; the workers end with the test.
func runIdleWorkers(t testing.TB, ds ...*Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var idled sync.WaitGroup
	for _, d := range ds {
		d.leaser.Hints().SetSweepEvery(time.Hour)
		idled.Add(1)
		var once sync.Once
		wg.Go(func() { assert.NoError(t, runWorker(ctx, d, worker.Hooks{Idled: func() { once.Do(idled.Done) }})) })
	}
	waited := make(chan struct{})
	go func() { idled.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		t.Fatal("the workers never idled")
	}
}

// arrivals records when a receiver first saw each delivery (by webhook-id).
type arrivals struct {
	mu sync.Mutex
	at map[string]time.Time
}

func recordArrivals(rc *receiver) *arrivals {
	a := &arrivals{at: map[string]time.Time{}}
	rc.setHook(func(r *http.Request) {
		now := time.Now()
		a.mu.Lock()
		defer a.mu.Unlock()
		if _, ok := a.at[r.Header.Get("webhook-id")]; !ok {
			a.at[r.Header.Get("webhook-id")] = now
		}
	})
	return a
}

func (a *arrivals) of(id string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.at[id]
	return at, ok
}

// wakeUpLatencies enqueues events, gap apart, on a Dispatcher that runs no worker, while replicas
// other Dispatchers idle in Run with their sweep off, and returns, per event, how long after its
// Enqueue began the receiver saw it. Each event must reach the receiver once. A first event, before
// them, is not measured.
func wakeUpLatencies(t testing.TB, tr *testRedis, replicas, events int, gap time.Duration) []time.Duration {
	t.Helper()
	producer := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	seen := recordArrivals(rc)
	mustCreate(t, producer, rc, "wake.*")
	var workers []*Dispatcher
	for range replicas {
		workers = append(workers, newTestDispatcherOn(t, tr.newClient(t), tr, Options{}))
	}
	runIdleWorkers(t, workers...)
	ctx := context.Background()
	// A first event, not measured, warms what a first call reads once (the scripts, the subscribers,
	// the workers' caches of the webhook and its circuit).
	_, err := producer.Enqueue(ctx, Event{Type: "wake.test", ID: "wake-warm"})
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() bool { return rc.count() == 1 }, "the first event attempted")
	sent := make(map[string]time.Time, events)
	next := time.Now()
	for i := range events {
		time.Sleep(time.Until(next))
		next = next.Add(gap)
		start := time.Now()
		res, err := producer.Enqueue(ctx, Event{Type: "wake.test", ID: fmt.Sprintf("wake-%d", i)})
		require.NoError(t, err)
		require.Len(t, res, 1)
		sent[res[0].Delivery.ID] = start
	}
	eventually(t, 30*time.Second, func() bool { return rc.count() >= 1+events }, "every event attempted, with no sweep to find it")
	assertEachSentOnce(t, rc, 1+events)
	var out []time.Duration
	for id, start := range sent {
		at, ok := seen.of(id)
		require.True(t, ok, "delivery %s arrived", id)
		out = append(out, at.Sub(start))
	}
	return out
}

// TestEnqueueWakesIdleWorkers: events enqueued on a replica that runs no worker are attempted by idle
// workers of other replicas, woken by the claim's wake, not found by a sweep (theirs is off): 40 events
// 250 ms apart, 3 idle replicas, each event sent once. How soon (p50, p99) is logged here and measured by
// BenchmarkWakeUp; BENCHMARKS.md has the figures.
func TestEnqueueWakesIdleWorkers(t *testing.T) {
	t.Parallel()
	lat := wakeUpLatencies(t, newTestRedis(t), 3, sized(40, 40), 250*time.Millisecond)
	t.Logf("enqueue to receiver, %d events, 3 idle replicas: p50 %s, p99 %s, max %s", len(lat),
		percentile(lat, 50), percentile(lat, 99), percentile(lat, 100))
}

// BenchmarkWakeUp measures how soon an idle worker attempts an event enqueued on a replica that runs
// no worker: b.N events (at most 40: -benchtime=40x is issue 46's measurement) 250 ms apart, 3 idle
// replicas (wakeUpLatencies); it reports their p50, p99 and slowest.
func BenchmarkWakeUp(b *testing.B) {
	lat := wakeUpLatencies(b, newTestRedis(b), 3, min(b.N, 40), 250*time.Millisecond)
	b.ReportMetric(float64(percentile(lat, 50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(percentile(lat, 100).Microseconds())/1000, "max-ms")
}

// TestRetryOfAnotherReplicaIsMadeAtItsDueTime: a retry that a replica running no worker scheduled (its
// inline attempt failed) is made by an idle worker of another replica at its due time, which the
// outcome's wake told it: not before, and with no sweep to find it (the lateness is logged).
func TestRetryOfAnotherReplicaIsMadeAtItsDueTime(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	producer := newTestDispatcher(t, tr, Options{RetrySchedule: []time.Duration{2 * time.Second}})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	mustCreate(t, producer, rc, "retry.*")
	runIdleWorkers(t, newTestDispatcherOn(t, tr.newClient(t), tr, Options{}))

	res, err := producer.Dispatch(context.Background(), Event{Type: "retry.test", ID: "r-1"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	dl := res[0].Delivery
	require.Equal(t, StatusPending, dl.Status, "the inline attempt failed: a retry is scheduled")
	due := dl.NextAttemptAt
	rc.status.Store(http.StatusOK)
	var made atomic.Int64 // when the retry came (Unix ns)
	rc.setHook(func(*http.Request) { made.CompareAndSwap(0, time.Now().UnixNano()) })
	eventually(t, 30*time.Second, func() bool { return made.Load() != 0 }, "the retry is made, with no sweep to find it")
	second := time.Unix(0, made.Load())
	id := dl.ID
	eventually(t, 10*time.Second, func() bool {
		dl, err = producer.Deliveries().Get(context.Background(), id)
		return err == nil && dl.Status == StatusSuccess
	}, "the retry's success recorded")
	assert.Equal(t, 2, rc.perDelivery()[dl.ID], "the first attempt and the retry")
	assert.False(t, second.Before(due.Truncate(time.Millisecond)), "not before its due time %s (made at %s)", due, second)
	t.Logf("the retry was due at %s, made %s later", due.Format("15:04:05.000"), second.Sub(due))
}

// TestCrashedAttemptIsTakenOverAtItsLeaseEnd: a process that claimed an inline attempt and died with it
// in flight (SIGKILL) left its lease in the inline zset; a worker that was idle all along, with no
// sweep, takes the delivery over once the lease ends, told by the claim's wake of the inline zset's
// head: not before its end (the lateness is logged).
func TestCrashedAttemptIsTakenOverAtItsLeaseEnd(t *testing.T) {
	ctx := context.Background()
	tr, rc, d, w, arrived, calls := newCrashTest(t)
	runIdleWorkers(t, d)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var took atomic.Int64 // when the takeover came (Unix ns)
	rc.setHook(func(*http.Request) {
		if calls.Add(1) == 1 {
			close(arrived)
			<-release // hold the helper's attempt until the helper is dead, as newCrashTest's hook
			return
		}
		took.CompareAndSwap(0, time.Now().UnixNano())
	})
	kill := startCrashHelper(t, tr, arrived, "crash-idle")
	shard := shardOf("crash-idle")
	entries, err := tr.rdb.ZRangeWithScores(ctx, d.keys.Inline(shard), 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, entries, 1, "the helper's inline lease")
	leaseEnd := rdb.MilliTime(int64(entries[0].Score))
	kill()
	eventually(t, 60*time.Second, func() bool { return took.Load() != 0 }, "an idle worker takes the delivery over")
	taken := time.Unix(0, took.Load())
	assert.False(t, taken.Before(leaseEnd), "not before the lease's end %s (taken at %s)", leaseEnd, taken)
	dl, err := d.Deliveries().Find(ctx, w.ID, "crash-idle")
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool {
		dl, err = d.Deliveries().Get(ctx, dl.ID)
		return err == nil && dl.Status == StatusSuccess
	}, "recorded")
	t.Logf("lease ended at %s, taken over %s later", leaseEnd.Format("15:04:05.000"), taken.Sub(leaseEnd))
}

// cuttable is a client on the test's Redis whose connections the test can cut, and whose dials it can
// fail meanwhile.
type cuttable struct {
	redis.UniversalClient
	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

func newCuttable(t testing.TB, tr *testRedis) *cuttable {
	t.Helper()
	c := &cuttable{}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.down {
			return nil, errors.New("cut by the test")
		}
		conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
		if err == nil {
			c.conns = append(c.conns, conn)
		}
		return conn, err
	}
	c.UniversalClient = tr.newClientDialing(t, dial)
	return c
}

// cut closes every connection and fails every dial until restore.
func (c *cuttable) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = true
	for _, conn := range c.conns {
		_ = conn.Close()
	}
	c.conns = nil
}

func (c *cuttable) restore() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = false
}

// TestWakesLostWithTheSubscriptionAreMadeUp: an event enqueued while an idle worker's connections are
// cut (its wake published to no one) is attempted once they are back, with no sweep to find it: a
// subscription made again reads every shard.
func TestWakesLostWithTheSubscriptionAreMadeUp(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	producer := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	mustCreate(t, producer, rc, "lost.*")
	client := newCuttable(t, tr)
	runIdleWorkers(t, newTestDispatcherOn(t, client, tr, Options{}))

	client.cut()
	_, err := producer.Enqueue(context.Background(), Event{Type: "lost.test", ID: "lost-1"})
	require.NoError(t, err)
	assert.Zero(t, rc.count(), "nothing attempted while the worker is cut off")
	client.restore()
	eventually(t, 30*time.Second, func() bool { return rc.count() == 1 }, "attempted once the subscription is back")
	assertEachSentOnce(t, rc, 1)
}
