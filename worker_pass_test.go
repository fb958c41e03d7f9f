package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
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

// TestUnusedProbeIsGivenBack: a pass that takes an open circuit's probe and leases nothing with it (the
// webhook's ready entry outlived its emptied queue: a ready score is only a lower bound) gives the
// probe back, so the webhook's next delivery is its probe at once, not a lease later.
func TestUnusedProbeIsGivenBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{Concurrency: 1, BreakAfter: 1, BreakFor: time.Minute,
		RetrySchedule: []time.Duration{}, Timeout: time.Second})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	wh := mustCreate(t, d, rc, "x")

	_, err := d.Enqueue(ctx, Event{Type: "x", ID: "e1"})
	require.NoError(t, err)
	n, err := d.ProcessDue(ctx) // fails for good (no retries): the circuit opens, the queue is empty
	require.NoError(t, err)
	require.Equal(t, 1, n)
	h, err := d.Webhooks().Health(ctx, wh.ID)
	require.NoError(t, err)
	require.Equal(t, CircuitOpen, h.State)
	s := shardOf("e1")
	require.NoError(t, tr.rdb.ZAdd(ctx, d.keys.Ready(s), redis.Z{Score: float64(clock.Now().UnixMilli()), Member: wh.ID}).Err(),
		"a ready entry left behind its emptied queue")

	clock.Advance(2 * time.Minute) // the open period is over
	_, err = d.ProcessDue(ctx)     // takes the probe for the empty queue: leases nothing
	require.NoError(t, err)
	h, err = d.Webhooks().Health(ctx, wh.ID)
	require.NoError(t, err)
	assert.Equal(t, CircuitOpen, h.State, "the probe was given back: open, its probe free to take")

	rc.status.Store(http.StatusOK)
	before := rc.count()
	_, err = d.Enqueue(ctx, Event{Type: "x", ID: "e2"})
	require.NoError(t, err)
	_, err = d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, before+1, rc.count(), "the new delivery went out as the probe")
	h, err = d.Webhooks().Health(ctx, wh.ID)
	require.NoError(t, err)
	assert.Equal(t, CircuitClosed, h.State, "its success closed the circuit")
}

// TestRunHoldsConcurrencyAttemptsAndTwiceAsManyLeasedAhead: while every request hangs, Run makes
// Concurrency attempts and leases twice as many more ahead, and no more, though two of its passes lease
// at once; once the receiver answers, every delivery goes out once.
func TestRunHoldsConcurrencyAttemptsAndTwiceAsManyLeasedAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	const slots, events = 4, 40
	d := newTestDispatcher(t, tr, Options{Concurrency: slots, Timeout: heldTimeout})
	setInFlightFloor(d, events) // the one webhook may hold every slot and every lease ahead
	rc := newReceiver(t)
	release := make(chan struct{})
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free) // a failed wait still frees the held requests, so the receiver's Close does not wait on them
	var c concurrency
	hold(rc, release, &c)
	wh := mustCreate(t, d, rc, "*")
	leased := func() int { return leasedNow(t, tr, d, wh.ID, time.Now()) }
	runCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	for i := range events { // each Enqueue pokes the worker
		_, err := d.Enqueue(ctx, Event{Type: "e", ID: fmt.Sprintf("e-%d", i)})
		require.NoError(t, err)
	}
	eventually(t, 10*time.Second, func() bool { return c.now.Load() == slots && leased() >= 3*slots },
		"Concurrency attempts hang and twice as many deliveries are leased ahead")
	time.Sleep(2 * worker.IdleWait) // both passes have polled again meanwhile
	assert.Equal(t, 3*slots, leased(), "no more leased than Concurrency attempts and twice as many ahead")
	assert.Equal(t, int32(slots), c.peak.Load(), "no more than Concurrency attempts")
	free()
	eventually(t, 15*time.Second, func() bool { return rc.count() >= events }, "every delivery goes out once released")
	stop()
	require.NoError(t, <-done)
	assertEachSentOnce(t, rc, events)
}

// TestScarceSlotsAreSharedInTurn: when a pass has fewer slots than webhooks with deliveries due, the
// webhooks it leaves out are served first by the next passes: six webhooks with backlogs, two slots
// per pass, and three passes serve each webhook once.
func TestScarceSlotsAreSharedInTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	const hooks, perHook = 6, 6
	d := newTestDispatcher(t, tr, Options{Concurrency: 2})
	rcs := make([]*receiver, hooks)
	for i := range rcs {
		rcs[i] = newReceiver(t)
		mustCreate(t, d, rcs[i], fmt.Sprintf("t%d", i))
	}
	for k := range perHook {
		for i := range hooks {
			_, err := d.Enqueue(ctx, Event{Type: fmt.Sprintf("t%d", i), ID: fmt.Sprintf("e-%d-%d", i, k)})
			require.NoError(t, err)
		}
	}
	for range hooks / 2 {
		n, err := d.ProcessDue(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n)
	}
	for i, rc := range rcs {
		assert.Equal(t, 1, rc.count(), "webhook %d served once in three passes of two slots", i)
	}
}

// heldTimeout is the attempt Timeout of the tests that hold an attempt while they look at the
// deliveries leased behind it: were the held attempt to time out first, the others would go out at
// once and the state the test waits for would have come and gone. At 5 s, a suite run with both cores
// busy (two `yes` loops) missed it once: the worker then slept, nothing left due on the test's clock.
// (A request held by hold is let go after 20 s whatever the Timeout: the window of the tests using it.)
const heldTimeout = time.Minute

// TestLeasedAheadThatWaitedTooLongGoesBackAtOnce: a delivery leased ahead that waited for a slot until
// its lease has less left than an attempt needs (worker.LeaseLeftToAttempt) goes back to its queue at once and
// is attempted under a new lease, not left until its lease ends (the test's clock never gets there).
// The receiver checks every request against its delivery's lease end (its queue score) on the
// Dispatcher's clock; each delivery is sent once.
func TestLeasedAheadThatWaitedTooLongGoesBackAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	const events = 3
	d, clock := newClockedDispatcher(t, tr, Options{Concurrency: 1, Timeout: heldTimeout})
	setInFlightFloor(d, events) // the one webhook may hold the slot and every lease ahead
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	release := make(chan struct{})
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free) // a failed wait still frees the held request, so the receiver's Close does not wait on it
	var first atomic.Bool
	var mu sync.Mutex
	var short []string // deliveries whose request came with less of their lease left than worker.LeaseLeftToAttempt
	rc.setHook(func(r *http.Request) {
		id := r.Header.Get("webhook-id")
		shard, err := d.keys.DeliveryShard(id)
		if err == nil {
			_, end, _ := queued(t, tr, d, shard, wh.ID, id)
			if left := time.Duration(int64(end)-clock.Now().UnixMilli()) * time.Millisecond; left < worker.LeaseLeftToAttempt(d.lease, d.opts.Timeout) {
				mu.Lock()
				short = append(short, fmt.Sprintf("%s: %s left", id, left))
				mu.Unlock()
			}
		}
		if first.CompareAndSwap(false, true) {
			<-release // the one slot is held while the others wait, leased ahead
		}
	})
	for i := range events {
		_, err := d.Enqueue(ctx, Event{Type: "e", ID: fmt.Sprintf("e-%d", i)})
		require.NoError(t, err)
	}
	leased := func() int { return leasedNow(t, tr, d, wh.ID, clock.Now()) }
	runCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	t.Cleanup(func() {
		if t.Failed() { // runs first: the held request still held, Run still going
			t.Logf("the receiver got %d requests (%v); %d deliveries leased", rc.count(), rc.perDelivery(), leased())
		}
	})
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	eventually(t, 10*time.Second, func() bool { return rc.count() == 1 && leased() == events },
		"one attempt hangs, the others are leased ahead")
	clock.Advance(d.lease - worker.LeaseLeftToAttempt(d.lease, d.opts.Timeout) + time.Second) // too little of their leases is left now
	free()
	eventually(t, 10*time.Second, func() bool { return rc.count() >= events }, "every delivery goes out, those that waited too long under a new lease")
	stop()
	require.NoError(t, <-done)
	mu.Lock()
	assert.Empty(t, short, "no attempt starts with too little of its lease left")
	mu.Unlock()
	assertEachSentOnce(t, rc, events)
}

// TestProbeHandedBackIsGivenBack: a delivery leased ahead as its webhook's probe that waited too long
// for a slot goes back to its queue and gives its probe back, so the next pass probes at once (the
// test's clock never reaches the probe's own end) and its success closes the circuit.
func TestProbeHandedBackIsGivenBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{Concurrency: 1, BreakAfter: 1, BreakFor: time.Minute,
		RetrySchedule: []time.Duration{}, Timeout: heldTimeout})
	a, b := newReceiver(t), newReceiver(t)
	mustCreate(t, d, a, "a")
	whB := mustCreate(t, d, b, "b")
	b.status.Store(http.StatusInternalServerError)
	_, err := d.Enqueue(ctx, Event{Type: "b", ID: "b-1"})
	require.NoError(t, err)
	_, err = d.ProcessDue(ctx) // fails for good: B's circuit opens
	require.NoError(t, err)
	h, err := d.Webhooks().Health(ctx, whB.ID)
	require.NoError(t, err)
	require.Equal(t, CircuitOpen, h.State)
	clock.Advance(2 * time.Minute) // B's open period is over: its next delivery is its probe
	b.status.Store(http.StatusOK)

	release := make(chan struct{})
	var c concurrency
	hold(a, release, &c)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- d.Run(runCtx) }()
	_, err = d.Enqueue(ctx, Event{Type: "a", ID: "a-1"})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return c.now.Load() == 1 }, "A's attempt holds the one slot")
	_, err = d.Enqueue(ctx, Event{Type: "b", ID: "b-2"})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool {
		h, err := d.Webhooks().Health(ctx, whB.ID)
		return err == nil && h.State == CircuitProbing
	}, "B's delivery is leased ahead as its probe")
	clock.Advance(d.lease - worker.LeaseLeftToAttempt(d.lease, d.opts.Timeout) + time.Second) // too little of its lease is left now
	close(release)
	eventually(t, 10*time.Second, func() bool { return b.count() == 2 }, "B's delivery goes out as a new probe")
	eventually(t, 10*time.Second, func() bool {
		h, err := d.Webhooks().Health(ctx, whB.ID)
		return err == nil && h.State == CircuitClosed
	}, "its success closes the circuit")
	stop()
	require.NoError(t, <-done)
}

// leasedNow counts a webhook's queue entries scored past now: those leased, when every delivery was
// due at once.
func leasedNow(t *testing.T, tr *testRedis, d *Dispatcher, webhookID string, now time.Time) int {
	t.Helper()
	ctx, after := context.Background(), strconv.FormatInt(now.UnixMilli()+1, 10)
	n := int64(0)
	for s := range d.keys.Shards {
		k, err := tr.rdb.ZCount(ctx, d.keys.Queue(s, webhookID), after, "+inf").Result()
		require.NoError(t, err)
		n += k
		// Inline attempts are leased by their claims, their entries in the inline zset.
		entries, err := tr.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: d.keys.Inline(s), ByScore: true, Start: after, Stop: "+inf"}).Result()
		require.NoError(t, err)
		for _, e := range entries {
			if _, wid, ok := rdb.SplitInlineEntry(e); ok && wid == webhookID {
				n++
			}
		}
	}
	return int(n)
}

// assertEachSentOnce asserts that the receiver got events deliveries, each once.
func assertEachSentOnce(t testing.TB, rc *receiver, events int) {
	t.Helper()
	per := rc.perDelivery()
	assert.Len(t, per, events)
	for id, n := range per {
		assert.Equal(t, 1, n, "delivery %s sent once", id)
	}
}
