package webhooks

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOrderedCrashMidAttemptKeepsTheOrder: a process dispatching the head of a key is killed with
// SIGKILL mid-attempt, while the next event of that key waits behind it. Nothing sends the waiting
// one while the dead process's lease runs; after it, a worker recovers the head, and only then sends
// the next. Another key is not held up meanwhile. Needs a Redis the helper process can reach.
func TestOrderedCrashMidAttemptKeepsTheOrder(t *testing.T) {
	ctx := context.Background()
	tr, rc, d, w, arrived, _ := newCrashTest(t)

	kill := startCrashHelper(t, tr, arrived, "crash-o1", "key-1")
	res, err := d.Dispatch(ctx, Event{Type: "crash.test", ID: "crash-o2", OrderKey: "key-1"})
	require.NoError(t, err)
	require.ErrorIs(t, res[0].Err, ErrDeferred, "queued behind the head in flight")
	res, err = d.Dispatch(ctx, Event{Type: "crash.test", ID: "crash-o3", OrderKey: "key-2"})
	require.NoError(t, err)
	require.Equal(t, StatusSuccess, res[0].Delivery.Status, "another key goes inline")
	kill() // SIGKILL mid-attempt

	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "while the dead process's lease runs, nothing of key-1 is sent")

	clock := newTestClock()
	clock.Advance(d.lease + time.Second)
	d.now = clock.Now
	for range 3 {
		_, err = d.ProcessDue(ctx)
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"crash-o1", "crash-o3", "crash-o1", "crash-o2"}, eventOrder(t, rc))
	for _, id := range []string{"crash-o1", "crash-o2", "crash-o3"} {
		assert.Equal(t, StatusSuccess, findDelivery(t, d, w.ID, id).Status, id)
	}
}
