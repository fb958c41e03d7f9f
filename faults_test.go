package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScriptFlushKeepsWorking: scripts vanish from the server (SCRIPT FLUSH, as after a failover);
// every call goes on working.
func TestScriptFlushKeepsWorking(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	rc := newReceiver(t)
	mustCreate(t, d, rc, "f.*")
	flush := func() {
		switch c := tr.rdb.(type) {
		case *redis.ClusterClient:
			require.NoError(t, c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return n.ScriptFlush(ctx).Err() }))
		default:
			require.NoError(t, tr.rdb.ScriptFlush(ctx).Err())
		}
	}
	for i := range 3 {
		flush()
		rc.status.Store(http.StatusInternalServerError)
		res, err := d.Dispatch(ctx, Event{Type: "f.x", ID: fmt.Sprint("flush-", i)})
		require.NoError(t, err)
		require.NoError(t, res[0].Err)
		assert.Equal(t, StatusPending, res[0].Delivery.Status)
		flush()
		rc.status.Store(http.StatusOK)
		clock.Advance(2 * time.Minute)
		n, err := d.ProcessDue(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		dl, err := d.Deliveries().Get(ctx, res[0].Delivery.ID)
		require.NoError(t, err)
		assert.Equal(t, StatusSuccess, dl.Status)
	}
}

// lostReply lets claim scripts run, then reports a timeout for the first `lose` of them, as if their
// replies were lost.
type lostReply struct {
	passHook
	lose atomic.Int32
}

func (h *lostReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && isClaim(cmd) && h.lose.Add(-1) >= 0 {
			err = fmt.Errorf("read tcp: i/o timeout: %w", os.ErrDeadlineExceeded)
			cmd.SetErr(err)
		}
		return err
	}
}

// TestClientTimeoutDuringClaim: a claim runs but its reply is lost. Dispatch runs the claim again
// under the same lease tokens and recognises the pairs it created: one delivery, one request.
func TestClientTimeoutDuringClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	client := tr.newClient(t)
	lost := &lostReply{}
	client.AddHook(lost)
	d := newTestDispatcherOn(t, client, tr, Options{})
	rc := newReceiver(t)
	mustCreate(t, d, rc, "t")
	mustCreate(t, d, rc, "t")

	lost.lose.Store(1)
	res, err := d.Dispatch(ctx, Event{Type: "t", ID: "timeout-1"})
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
		assert.False(t, r.Duplicate, "the retried claim knows its own pairs")
		assert.Equal(t, StatusSuccess, r.Delivery.Status)
	}
	res, err = d.Dispatch(ctx, Event{Type: "t", ID: "timeout-1"})
	require.NoError(t, err)
	for _, r := range res {
		assert.True(t, r.Duplicate)
	}
	assert.Equal(t, 2, rc.count(), "one request per pair")
}

// TestClientTimeoutDuringClaimTwice: both the claim and its retry lose their replies. The caller gets
// the error; its own retry of Dispatch finds the claim, and the lease brings the pair to a worker,
// which delivers it once.
func TestClientTimeoutDuringClaimTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	client := tr.newClient(t)
	lost := &lostReply{}
	client.AddHook(lost)
	clock := newTestClock()
	d := newTestDispatcherOn(t, client, tr, Options{})
	d.now = clock.Now
	rc := newReceiver(t)
	w := mustCreate(t, d, rc, "t")
	evt := Event{Type: "t", ID: "timeout-2"}

	lost.lose.Store(2)
	res, err := d.Dispatch(ctx, evt)
	require.ErrorIs(t, err, ErrNotAccepted)
	require.ErrorIs(t, res[0].Err, os.ErrDeadlineExceeded, "the lost reply is the target's error")
	assert.Equal(t, 0, rc.count(), "nothing is sent without a claim reply")

	res, err = d.Dispatch(ctx, evt)
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	assert.True(t, res[0].Duplicate, "a new call finds the claim the lost reply made")
	assert.Equal(t, StatusPending, res[0].Delivery.Status)
	assert.Equal(t, 0, rc.count())

	clock.Advance(d.lease + time.Second)
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the lease of the unanswered claim expires and a worker delivers it")
	dl, err := d.Deliveries().Find(ctx, w.ID, evt.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, dl.Status)
	assert.Equal(t, 1, rc.count(), "delivered once")
}

// startRedis runs a redis-server of this test's own on a spare loopback port, with an append-only
// file synced on every write, and returns its address and a function that kills it with SIGKILL.
func startRedis(t *testing.T, dir string, port int) (addr string, kill func()) {
	t.Helper()
	cmd := exec.Command("redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "yes", "--appendfsync", "always", "--dir", dir, "--maxmemory-policy", "noeviction")
	require.NoError(t, cmd.Start())
	var once sync.Once
	kill = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	eventually(t, 10*time.Second, func() bool { return c.Ping(context.Background()).Err() == nil }, "redis-server answers")
	return addr, kill
}

// ownRedis starts a redis-server of the test's own (startRedis) and returns its address and a client
// on it, for tests that change the whole server (maxmemory, CLIENT PAUSE, INFO commandstats); it skips
// the test outside the real-Redis pass or without redis-server.
func ownRedis(t *testing.T) (addr string, admin *redis.Client) {
	t.Helper()
	if os.Getenv("WEBHOOKS_REDIS_ADDR") == "" {
		t.Skip("runs with the real-Redis pass (WEBHOOKS_REDIS_ADDR)")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not on PATH")
	}
	addr, _ = startRedis(t, t.TempDir(), sparePort(t))
	admin = redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	return addr, admin
}

func sparePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRedisRestart: the server is killed mid-run. Calls fail with a clear error while it is down; once
// it is back (with its append-only file) the dispatcher and a running worker carry on by themselves,
// and claims made before the crash still hold. It starts a redis-server of its own, so it runs in the
// real-Redis pass only.
func TestRedisRestart(t *testing.T) {
	if os.Getenv("WEBHOOKS_REDIS_ADDR") == "" {
		t.Skip("runs with the real-Redis pass (WEBHOOKS_REDIS_ADDR)")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not on PATH")
	}
	ctx := context.Background()
	dir, port := t.TempDir(), sparePort(t)
	addr, kill := startRedis(t, dir, port)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	d, err := New(rdb, Options{KeyPrefix: "restart", AllowPrivateNetworks: true, Timeout: 2 * time.Second,
		RetrySchedule: []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}})
	require.NoError(t, err)
	rc := newReceiver(t)
	failFirst(rc)
	_, err = d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"r.*"}})
	require.NoError(t, err)

	runCtx, stop := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- d.Run(runCtx) }()
	defer func() {
		stop()
		<-runDone
	}()

	res, err := d.Dispatch(ctx, Event{Type: "r.x", ID: "before"})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	eventually(t, 10*time.Second, func() bool { return rc.perDelivery()[res[0].Delivery.ID] == 2 }, "retried before the crash")

	kill()
	d.webhooks.invalidate()
	_, err = d.Dispatch(ctx, Event{Type: "r.x", ID: "during"})
	require.Error(t, err, "a call while Redis is down fails")
	var opErr *net.OpError
	assert.True(t, errors.As(err, &opErr), "with the connection error in its chain: %v", err)
	assert.Contains(t, err.Error(), "webhooks: resolve subscribers")
	time.Sleep(300 * time.Millisecond) // the worker meets the outage too

	_, _ = startRedis(t, dir, port)
	eventually(t, 10*time.Second, func() bool { return rdb.Ping(ctx).Err() == nil }, "the client reconnects by itself")
	res, err = d.Dispatch(ctx, Event{Type: "r.x", ID: "before"})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	assert.True(t, res[0].Duplicate, "the append-only file kept the claim across the crash")
	res, err = d.Dispatch(ctx, Event{Type: "r.x", ID: "after"})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	require.Equal(t, StatusPending, res[0].Delivery.Status)
	eventually(t, 10*time.Second, func() bool { return rc.perDelivery()[res[0].Delivery.ID] == 2 }, "the running worker retries after the restart")
	select {
	case err := <-runDone:
		t.Fatalf("Run gave up during the outage: %v", err)
	default:
	}
}
