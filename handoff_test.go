package webhooks

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

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

// heldRun makes rc hold every request until free is called (at the test's end at the latest), starts
// d's Run and returns once Run has nothing to do, its lanes held still until go_ is called (so that no
// pass of theirs takes Run's room while the test enqueues); stop ends Run and checks its error.
func heldRun(t *testing.T, d *Dispatcher, rc *receiver) (c *concurrency, free, go_, stop func()) {
	t.Helper()
	release, gate, idle := make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
	var freeOnce, gateOnce sync.Once
	free = func() { freeOnce.Do(func() { close(release) }) }
	go_ = func() { gateOnce.Do(func() { close(gate) }) }
	t.Cleanup(free)
	t.Cleanup(go_)
	c = &concurrency{}
	hold(rc, release, c)
	d.idled = func() { // the first lane, about to wait: it waits here until go_
		select {
		case idle <- struct{}{}:
		default:
		}
		<-gate
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(runCtx) }()
	select {
	case <-idle:
	case <-time.After(10 * time.Second):
		t.Fatal("Run never went idle")
	}
	require.NotNil(t, d.runs.Load(), "Run takes hand-offs")
	return c, free, go_, func() {
		go_()
		cancel()
		require.NoError(t, <-done)
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
	c, free, go_, stop := heldRun(t, d, rc)
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
	stop()
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
	c, free, go_, stop := heldRun(t, d, rc)
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
	stop()
	assertEachSentOnce(t, rc, events)
	assert.Zero(t, inlineEntries(t, tr, d, wh.ID), "none left in the inline zset")
}
