package webhooks

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCrashMidAttemptIsRecovered: a separate process dispatches an event and is killed with SIGKILL
// while its first attempt is in flight. Nothing records that attempt; once its lease expires, a worker
// in this process delivers the pair, and the record ends in success with the attempt counted. Needs a
// Redis the helper process can reach, so it is skipped on miniredis.
func TestCrashMidAttemptIsRecovered(t *testing.T) {
	ctx := context.Background()
	tr, rc, d, w, arrived, calls := newCrashTest(t)

	kill := startCrashHelper(t, tr, arrived, "crash-1")
	kill() // SIGKILL mid-attempt

	dl, err := d.Deliveries().Find(ctx, w.ID, "crash-1")
	require.NoError(t, err, "the claim and the record were created before the attempt")
	assert.Equal(t, StatusPending, dl.Status, "the crashed attempt was never recorded")
	assert.Equal(t, 0, dl.Attempts)

	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "while the dead process's lease runs, no worker takes the delivery")

	clock := newTestClock()
	clock.Advance(d.lease + time.Second)
	d.now = clock.Now
	n, err = d.ProcessDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "after the lease a worker attempts it")
	dl, err = d.Deliveries().Get(ctx, dl.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, dl.Status)
	assert.Equal(t, 1, dl.Attempts, "the worker's attempt is counted")
	assert.Equal(t, int32(2), calls.Load(), "the receiver saw the lost attempt and the recovery")
	per := rc.perDelivery()
	assert.Equal(t, map[string]int{dl.ID: 2}, per, "both requests carry the same webhook-id, so the receiver can deduplicate")
}

// startCrashHelper builds testdata/crashdispatch and starts it on the test's key prefix with args (an
// event id, an order key); it returns once arrived is closed (the receiver holds the helper's
// attempt), with kill, which SIGKILLs the helper and waits for its end.
func startCrashHelper(t *testing.T, tr *testRedis, arrived <-chan struct{}, args ...string) (kill func()) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "crashdispatch")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/crashdispatch").CombinedOutput()
	require.NoError(t, err, "build the helper: %s", out)
	helper := exec.Command(bin, append([]string{tr.prefix}, args...)...)
	helper.Env = os.Environ()
	require.NoError(t, helper.Start())
	exited := make(chan error, 1)
	go func() { exited <- helper.Wait() }()
	select {
	case <-arrived:
	case err := <-exited:
		t.Fatalf("the helper exited before its attempt arrived: %v", err)
	case <-time.After(30 * time.Second):
		_ = helper.Process.Kill()
		t.Fatal("the helper's attempt never arrived")
	}
	return func() {
		require.NoError(t, helper.Process.Kill())
		<-exited
	}
}

// newCrashTest skips a crash test without a real Redis (the helper process must reach it), and
// returns its Redis, a receiver that holds its first request until the test ends (arrived is closed
// when it comes; calls counts the requests), and a Dispatcher with a webhook on it for crash.*.
func newCrashTest(t *testing.T) (tr *testRedis, rc *receiver, d *Dispatcher, w *Webhook, arrived chan struct{}, calls *atomic.Int32) {
	if os.Getenv("WEBHOOKS_REDIS_ADDR") == "" && os.Getenv("WEBHOOKS_REDIS_CLUSTER") == "" {
		t.Skip("needs a real Redis shared with a helper process: set WEBHOOKS_REDIS_ADDR or WEBHOOKS_REDIS_CLUSTER")
	}
	tr, rc = newTestRedis(t), newReceiver(t)
	arrived, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	calls = new(atomic.Int32)
	rc.setHook(func(r *http.Request) {
		if calls.Add(1) == 1 {
			close(arrived)
			<-release // hold the helper's attempt until the helper is dead
		}
	})
	d = newTestDispatcher(t, tr, Options{Timeout: 5 * time.Second})
	return tr, rc, d, mustCreate(t, d, rc, "crash.*"), arrived, calls
}
