package webhooks

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	ks "github.com/smartdrop/webhooks/internal/keyspace"
)

// inlineEntries counts a webhook's entries in the inline zsets: deliveries leased by their claims.
func inlineEntries(t *testing.T, tr *testRedis, d *Dispatcher, webhookID string) int {
	t.Helper()
	n := 0
	for s := range d.keys.Shards {
		entries, err := tr.rdb.ZRange(context.Background(), d.keys.inlineKey(s), 0, -1).Result()
		require.NoError(t, err)
		for _, e := range entries {
			if _, wid, ok := ks.SplitInlineEntry(e); ok && wid == webhookID {
				n++
			}
		}
	}
	return n
}

// queuedDue counts a webhook's queue entries due at now: deliveries no worker has leased.
func queuedDue(t *testing.T, tr *testRedis, d *Dispatcher, webhookID string, now time.Time) int {
	t.Helper()
	n := int64(0)
	for s := range d.keys.Shards {
		k, err := tr.rdb.ZCount(context.Background(), d.keys.queueKey(s, webhookID), "-inf", strconv.FormatInt(now.UnixMilli(), 10)).Result()
		require.NoError(t, err)
		n += k
	}
	return int(n)
}

// heldRun is a Run whose receiver holds every request until free, and whose lanes are held still
// until go_ (so that no pass of theirs takes Run's room while a test enqueues).
type heldRun struct {
	c               *concurrency
	free, go_, halt func() // halt ends Run's context (its lanes still held until go_)
	done            chan error
}

// startHeldRun makes rc hold every request until free is called (at the test's end at the latest),
// starts d's Run and returns once Run has nothing to do, its lanes held still until go_.
func startHeldRun(t *testing.T, d *Dispatcher, rc *receiver) *heldRun {
	t.Helper()
	release, gate, idle := make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
	var freeOnce, gateOnce sync.Once
	h := &heldRun{c: &concurrency{}, done: make(chan error, 1)}
	h.free = func() { freeOnce.Do(func() { close(release) }) }
	h.go_ = func() { gateOnce.Do(func() { close(gate) }) }
	t.Cleanup(h.free)
	t.Cleanup(h.go_)
	hold(rc, release, h.c)
	d.idled = func() { // the first lane, about to wait: it waits here until go_
		select {
		case idle <- struct{}{}:
		default:
		}
		<-gate
	}
	runCtx, cancel := context.WithCancel(context.Background())
	h.halt = cancel
	t.Cleanup(cancel)
	go func() { h.done <- d.Run(runCtx) }()
	select {
	case <-idle:
	case <-time.After(10 * time.Second):
		t.Fatal("Run never went idle")
	}
	require.NotNil(t, d.runs.Load(), "Run takes hand-offs")
	return h
}

// stop ends Run and checks that it returns, without error.
func (h *heldRun) stop(t *testing.T) {
	t.Helper()
	h.go_()
	h.halt()
	select {
	case err := <-h.done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
}

// TestEnqueueHandsItsDeliveriesToRun: with a Run going and the webhook's circuit known closed, Enqueue
// leases each delivery in its claim and hands it to Run, up to the slots Run has (Concurrency attempts
// and twice as many leased ahead); the others go to their queue. While the attempts hang, the handed
// deliveries' entries are in the inline zset, none of them in the queue; once the receiver answers,
// every delivery is sent once and no schedule entry is left.
func TestEnqueueHandsItsDeliveriesToRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	const slots, extra = 4, 5
	d := newTestDispatcher(t, tr, Options{Concurrency: slots, MaxInFlightPerWebhook: 64, Timeout: 15 * time.Second})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	h := startHeldRun(t, d, rc)
	c, free, go_ := h.c, h.free, h.go_
	const events = 3*slots + extra
	for i := range events {
		d.circuitsOf(ctx, []string{wh.ID}) // the circuit known closed, as attempts keep it
		_, err := d.Enqueue(ctx, Event{Type: "e", ID: fmt.Sprintf("e-%d", i)})
		require.NoError(t, err)
	}
	eventually(t, 10*time.Second, func() bool { return c.now.Load() == slots }, "Concurrency attempts hang")
	assert.Equal(t, 3*slots, inlineEntries(t, tr, d, wh.ID), "handed to Run: Concurrency attempts and twice as many ahead")
	assert.Equal(t, extra, queuedDue(t, tr, d, wh.ID, time.Now()), "the rest wait in their queue, not leased")
	assert.Equal(t, 3*slots, leasedNow(t, tr, d, wh.ID, time.Now()), "no more leased than Run holds")
	go_()
	time.Sleep(2 * idleWait) // both lanes have passed meanwhile
	assert.Equal(t, 3*slots, leasedNow(t, tr, d, wh.ID, time.Now()), "nor once Run's lanes go on")
	free()
	eventually(t, 15*time.Second, func() bool { return rc.count() >= events }, "every delivery goes out once released")
	h.stop(t)
	assertEachSentOnce(t, rc, events)
	assert.Zero(t, inlineEntries(t, tr, d, wh.ID), "the outcomes took the inline entries")
	assert.Zero(t, queuedDue(t, tr, d, wh.ID, time.Now().Add(time.Hour)), "nothing left in the queue")
	assert.Nil(t, d.runs.Load(), "a Run that ended takes no hand-off")
}

// TestHandedOffDeliveryThatWaitedTooLongGoesBack: a delivery Enqueue handed to Run that waited for a
// slot until too little of its lease is left goes back to its queue at once (out of the inline zset),
// and is attempted under a new lease; each delivery is sent once (the test's clock never reaches the
// leases' end).
func TestHandedOffDeliveryThatWaitedTooLongGoesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	const events = 3
	d, clock := newClockedDispatcher(t, tr, Options{Concurrency: 1, MaxInFlightPerWebhook: events, Timeout: 5 * time.Second})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	h := startHeldRun(t, d, rc)
	c, free, go_ := h.c, h.free, h.go_
	d.circuitsOf(ctx, []string{wh.ID}) // known closed (cached on the test's clock, which stands still)
	for i := range events {
		_, err := d.Enqueue(ctx, Event{Type: "e", ID: fmt.Sprintf("e-%d", i)})
		require.NoError(t, err)
	}
	eventually(t, 10*time.Second, func() bool { return c.now.Load() == 1 }, "one attempt hangs")
	require.Equal(t, events, inlineEntries(t, tr, d, wh.ID), "every delivery handed to Run")
	go_()
	clock.Advance(d.lease - d.leaseLeftToAttempt() + time.Second) // too little of their leases is left now
	free()
	eventually(t, 10*time.Second, func() bool { return rc.count() >= events }, "every delivery goes out, those that waited too long from their queue")
	h.stop(t)
	assertEachSentOnce(t, rc, events)
	assert.Zero(t, inlineEntries(t, tr, d, wh.ID), "none left in the inline zset")
}

// TestEnqueueHandsOffOnlyWhatRunCanTake: Enqueue hands a delivery to Run in one round trip when the
// webhook's circuit is known closed (or the breaker is off); a webhook whose circuit this process does
// not know, one with a RateLimit, an ordered event, and a Run whose context has ended get none, their
// deliveries left to their queues.
func TestEnqueueHandsOffOnlyWhatRunCanTake(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		breaker   bool // BreakAfter 5, else the breaker is off
		known     bool // the circuit read into this process's cache first
		rateLimit int
		orderKey  string
		halted    bool // Run's context ended (its lanes still held)
		haltClaim bool // Run's context ends while the claim is in flight (a slot reserved)
		handed    bool
	}{
		{name: "breaker off", handed: true},
		{name: "circuit known closed", breaker: true, known: true, handed: true},
		{name: "circuit not known", breaker: true},
		{name: "rate limited", rateLimit: 100},
		{name: "ordered event", orderKey: "k"},
		{name: "Run's context ended", halted: true},
		{name: "Run's context ends during the claim", haltClaim: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			c, sent, during := tr.newClient(t), &benchHook{}, &callHook{}
			c.AddHook(sent)
			c.AddHook(during)
			opts := Options{}
			if tc.breaker {
				opts.BreakAfter = 5
			}
			d := newTestDispatcherOn(t, c, tr, opts)
			rc := newReceiver(t)
			wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, RateLimit: tc.rateLimit})
			require.NoError(t, err)
			_, err = d.webhooks.subscribers(ctx, "", "e") // cached: the Enqueue below resolves none
			require.NoError(t, err)
			require.NoError(t, claimScript.Load(ctx, c).Err(), "Redis has the claim script (else EVALSHA, then EVAL)")
			h := startHeldRun(t, d, rc)
			if tc.known {
				d.circuitsOf(ctx, []string{wh.ID})
			}
			if tc.halted {
				h.halt()
			}
			if tc.haltClaim {
				during.f.Store(&h.halt)
			}
			before := sent.trips.Load()
			_, err = d.Enqueue(ctx, Event{Type: "e", ID: "e-1", OrderKey: tc.orderKey})
			require.NoError(t, err)
			during.f.Store(nil)
			trips := sent.trips.Load() - before
			inline, due := inlineEntries(t, tr, d, wh.ID), queuedDue(t, tr, d, wh.ID, time.Now())
			queued := queuedDue(t, tr, d, wh.ID, time.Now().Add(time.Hour)) // due, or leased by a lane
			switch {
			case tc.handed:
				assert.Equal(t, 1, inline, "handed to Run")
				assert.Equal(t, int64(1), trips, "in one round trip")
			case tc.haltClaim:
				assert.Zero(t, inline, "leased by the claim, not handed to a Run that is ending")
				assert.Equal(t, 1, queued, "given back to its queue")
				assert.Zero(t, due, "due when the claim's lease ends")
			case tc.halted:
				assert.Zero(t, inline, "not leased")
				assert.Equal(t, 1, due, "left to its queue, due now")
			default:
				assert.Zero(t, inline, "not leased")
				assert.Equal(t, 1, queued, "left to its queue")
			}
			h.free()
			h.stop(t)
			if tc.halted || tc.haltClaim {
				assert.Zero(t, rc.count(), "no attempt once Run's context ended")
			}
		})
	}
}

// TestPanickingEnqueueGivesBackItsHandOff: an Enqueue that panics after it reserved a slot of Run's for
// a hand-off (here in the Redis client, during its claim) gives the slot back, and its webhook's
// in-flight slot: Run keeps its room and returns when its context ends.
func TestPanickingEnqueueGivesBackItsHandOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	c, boom := tr.newClient(t), &panicHook{}
	c.AddHook(boom)
	d := newTestDispatcherOn(t, c, tr, Options{})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	_, err := d.webhooks.subscribers(ctx, "", "e") // cached: the Enqueue below resolves none
	require.NoError(t, err)
	h := startHeldRun(t, d, rc)
	room := d.flights.room(wh.ID)
	boom.armed.Store(true)
	func() {
		defer func() { assert.NotNil(t, recover(), "the client panicked") }()
		_, _ = d.Enqueue(ctx, Event{Type: "e", ID: "e-1"})
	}()
	boom.armed.Store(false)
	r := d.runs.Load()
	require.NotNil(t, r)
	r.mu.Lock()
	leasing := r.leasing
	r.mu.Unlock()
	assert.Zero(t, leasing, "Run's slot given back")
	assert.Equal(t, room, d.flights.room(wh.ID), "the webhook's in-flight slot given back")
	h.free()
	h.stop(t)
}

// callHook calls f, when set, before every command or pipeline.
type callHook struct {
	passHook
	f atomic.Pointer[func()]
}

func (h *callHook) call() {
	if f := h.f.Load(); f != nil {
		(*f)()
	}
}

func (h *callHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.call(); return next(ctx, cmd) }
}

func (h *callHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.call(); return next(ctx, cmds) }
}

// panicHook panics on every command while armed.
type panicHook struct {
	passHook
	armed atomic.Bool
}

func (p *panicHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if p.armed.Load() {
			panic("webhooks test: the client panics")
		}
		return next(ctx, cmd)
	}
}

func (p *panicHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if p.armed.Load() {
			panic("webhooks test: the client panics")
		}
		return next(ctx, cmds)
	}
}

// TestConcurrentEnqueuesStayWithinEachRunsRoom: 16 goroutines Enqueue at once into two Dispatchers
// (separate clients, one keyspace), each with a Run whose attempts hang: each Run is handed exactly the
// room it has (Concurrency attempts and twice as many leased ahead), no more, the rest wait in their
// queue; once released, every delivery is sent once and no inline entry is left.
func TestConcurrentEnqueuesStayWithinEachRunsRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	const slots, perRun, extra, callers = 4, 3 * 4, 8, 16
	opts := Options{Concurrency: slots, MaxInFlightPerWebhook: 64, Timeout: 15 * time.Second}
	ds := []*Dispatcher{newTestDispatcherOn(t, tr.newClient(t), tr, opts), newTestDispatcherOn(t, tr.newClient(t), tr, opts)}
	rc := newReceiver(t)
	wh := mustCreate(t, ds[0], rc, "*")
	for _, d := range ds {
		_, err := d.webhooks.subscribers(ctx, "", "e") // each sees the webhook
		require.NoError(t, err)
	}
	runs := []*heldRun{startHeldRun(t, ds[0], rc), startHeldRun(t, ds[1], rc)} // rc holds until the last's free
	const events = 2*perRun + extra
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := g; i < events; i += callers {
				_, err := ds[i%2].Enqueue(ctx, Event{Type: "e", ID: fmt.Sprintf("e-%d", i)})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	eventually(t, 10*time.Second, func() bool { return runs[1].c.now.Load() == 2*slots }, "each Run's Concurrency attempts hang")
	assert.Equal(t, 2*perRun, inlineEntries(t, tr, ds[0], wh.ID), "each Run handed exactly its room")
	assert.Equal(t, extra, queuedDue(t, tr, ds[0], wh.ID, time.Now()), "the rest wait in their queue")
	for _, h := range runs {
		h.go_()
	}
	time.Sleep(2 * idleWait) // every lane has passed meanwhile
	assert.Equal(t, 2*perRun, leasedNow(t, tr, ds[0], wh.ID, time.Now()), "no more leased once the lanes go on")
	for _, h := range runs {
		h.free()
	}
	eventually(t, 15*time.Second, func() bool { return rc.count() >= events }, "every delivery goes out once released")
	for _, h := range runs {
		h.stop(t)
	}
	assertEachSentOnce(t, rc, events)
	assert.Zero(t, inlineEntries(t, tr, ds[0], wh.ID), "the outcomes took the inline entries")
}
