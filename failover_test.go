package webhooks

// Tests on a 3-master + 3-replica Redis Cluster that .ci/run starts for them: they run only when
// WEBHOOKS_REDIS_FAILOVER_CLUSTER (seeds) and WEBHOOKS_REDIS_FAILOVER_PIDS (port=pid pairs of every
// node) are set. TestReplicaAcks pauses a replica (SIGSTOP, then SIGCONT); TestFailover kills a
// master with SIGKILL (the script's cleanup stops the rest by pid).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failoverCluster is the cluster of the failover tests.
type failoverCluster struct {
	seeds []string
	pids  map[string]int // "127.0.0.1:port" -> pid
}

func newFailoverCluster(t *testing.T) *failoverCluster {
	t.Helper()
	seeds, pids := os.Getenv("WEBHOOKS_REDIS_FAILOVER_CLUSTER"), os.Getenv("WEBHOOKS_REDIS_FAILOVER_PIDS")
	if seeds == "" || pids == "" {
		t.Skip("runs on the failover cluster of .ci/run (WEBHOOKS_REDIS_FAILOVER_CLUSTER, WEBHOOKS_REDIS_FAILOVER_PIDS)")
	}
	fc := &failoverCluster{seeds: strings.Split(seeds, ","), pids: map[string]int{}}
	for _, kv := range strings.Split(pids, ",") {
		port, pid, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(pid)
		require.True(t, ok && err == nil, "bad WEBHOOKS_REDIS_FAILOVER_PIDS entry %q", kv)
		fc.pids["127.0.0.1:"+port] = n
	}
	return fc
}

// client is a ClusterClient with go-redis's default options.
func (fc *failoverCluster) client(t *testing.T) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: fc.seeds})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clusterNode is a line of CLUSTER NODES.
type clusterNode struct {
	id, addr, master string // master: the id of a replica's master, "-" for a master
	isMaster, failed bool
}

// nodes reads CLUSTER NODES from any node that answers.
func (fc *failoverCluster) nodes(ctx context.Context) ([]clusterNode, error) {
	var lastErr error
	for addr := range fc.pids {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 500 * time.Millisecond})
		out, err := c.ClusterNodes(ctx).Result()
		_ = c.Close()
		if err != nil {
			lastErr = err
			continue
		}
		var ns []clusterNode
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 8 {
				continue
			}
			addr, _, _ := strings.Cut(f[1], "@")
			ns = append(ns, clusterNode{id: f[0], addr: addr, master: f[3], isMaster: strings.Contains(f[2], "master"),
				failed: strings.Contains(f[2], "fail")})
		}
		return ns, nil
	}
	return nil, fmt.Errorf("no node answers: %w", lastErr)
}

// masterAndReplica returns the address of the master serving key, and of its replica.
func (fc *failoverCluster) masterAndReplica(t *testing.T, c *redis.ClusterClient, key string) (master, replica string) {
	t.Helper()
	ctx := context.Background()
	node, err := c.MasterForKey(ctx, key)
	require.NoError(t, err)
	master = node.Options().Addr
	ns, err := fc.nodes(ctx)
	require.NoError(t, err)
	id := ""
	for _, n := range ns {
		if n.addr == master {
			id = n.id
		}
	}
	for _, n := range ns {
		if n.master == id && !n.failed {
			replica = n.addr
		}
	}
	require.NotEmpty(t, replica, "master %s has a replica", master)
	return master, replica
}

// TestReplicaAcks: with ReplicaAcks 1, claims wait for the replica; with one master's replica stopped
// (SIGSTOP), claims to that master fail with ErrNotAccepted after ReplicaAckTimeout, their records kept,
// while claims to the other masters are not delayed.
func TestReplicaAcks(t *testing.T) {
	fc := newFailoverCluster(t)
	ctx := context.Background()
	c := fc.client(t)
	tr := &testRedis{rdb: c, prefix: "wht_acks_" + randomHex(3)}
	t.Cleanup(func() { tr.deleteKeys(t) })
	const ackTimeout = 500 * time.Millisecond
	d := newTestDispatcherOn(t, c, tr, Options{ReplicaAcks: 1, ReplicaAckTimeout: ackTimeout})
	rc := newReceiver(t)
	mustCreate(t, d, rc, "a.*")

	// Every claim is acknowledged while the replicas run.
	for i := range 20 {
		res, err := d.Enqueue(ctx, Event{Type: "a.x", ID: fmt.Sprint("acked-", i)})
		require.NoError(t, err)
		require.True(t, res[0].Accepted())
	}

	// The cost of ReplicaAcks: claim latency without and with WAIT, the replicas running.
	plain := newTestDispatcherOn(t, c, tr, Options{})
	for _, dd := range []*Dispatcher{plain, d} {
		lat := make([]time.Duration, 0, 300)
		for i := range cap(lat) {
			start := time.Now()
			_, err := dd.Enqueue(ctx, Event{Type: "a.x", ID: fmt.Sprintf("cost-%d-%d", dd.opts.ReplicaAcks, i)})
			require.NoError(t, err)
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		t.Logf("ReplicaAcks %d: Enqueue (1 target) p50 %s, p99 %s over %d claims", dd.opts.ReplicaAcks,
			lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond), len(lat))
	}

	// Stop the replica of shard 0's master.
	master, replica := fc.masterAndReplica(t, c, d.keys.Ready(0))
	pid := fc.pids[replica]
	require.NotZero(t, pid)
	// An event on that master, claimed (and acknowledged) before the replica stops: dispatched again
	// below, its duplicate must wait for the replica as its claim did.
	known := ""
	for i := 0; known == "" && i < 200; i++ {
		id := fmt.Sprint("known-", i)
		node, err := c.MasterForKey(ctx, d.keys.Ready(d.keys.ShardOf(id)))
		require.NoError(t, err)
		if node.Options().Addr == master {
			res, err := d.Enqueue(ctx, Event{Type: "a.x", ID: id})
			require.NoError(t, err)
			require.True(t, res[0].Accepted())
			known = id
		}
	}
	require.NotEmpty(t, known, "an event on the master whose replica stops")
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		// Let the replica catch up, so that a later test may kill its master.
		m := redis.NewClient(&redis.Options{Addr: master})
		defer m.Close()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if info, err := m.Info(ctx, "replication").Result(); err == nil && strings.Contains(info, "state=online") {
				return
			}
		}
		t.Errorf("replica %s did not catch up with %s within 30s", replica, master)
	})
	t.Logf("stopped replica %s (pid %d) of master %s", replica, pid, master)

	var slowMax, otherMax time.Duration
	var slow, other int
	for i := 0; (slow < 3 || other < 10) && i < 400; i++ {
		id := fmt.Sprint("paused-", i)
		s := d.keys.ShardOf(id)
		node, err := c.MasterForKey(ctx, d.keys.Ready(s))
		require.NoError(t, err)
		onStopped := node.Options().Addr == master
		if onStopped && slow >= 3 || !onStopped && other >= 10 {
			continue
		}
		start := time.Now()
		res, err := d.Enqueue(ctx, Event{Type: "a.x", ID: id})
		took := time.Since(start)
		if onStopped {
			slow++
			slowMax = max(slowMax, took)
			require.ErrorIs(t, err, ErrNotAccepted, "a claim its replica did not acknowledge is not accepted")
			assert.False(t, res[0].Accepted())
			assert.GreaterOrEqual(t, took, ackTimeout, "it waited for the replica")
			// Its record is kept: dispatching again finds it.
			_, err := d.Deliveries().Get(ctx, d.keys.DeliveryID(res[0].WebhookID, id))
			require.NoError(t, err, "the record is kept")
		} else {
			other++
			otherMax = max(otherMax, took)
			require.NoError(t, err)
			assert.Less(t, took, ackTimeout/2, "another master's claim is not delayed")
		}
	}
	t.Logf("claims to the stopped replica's master: %d, slowest %s; to the others: %d, slowest %s", slow, slowMax, other, otherMax)

	// A duplicate of an event this Dispatcher claimed is not answered by a read of its records (the
	// known events): with ReplicaAcks its claim runs, and waits for the replica, as the first did.
	start := time.Now()
	res, err := d.Enqueue(ctx, Event{Type: "a.x", ID: known})
	require.ErrorIs(t, err, ErrNotAccepted, "a duplicate waits for the replica that does not acknowledge")
	assert.False(t, res[0].Accepted())
	assert.GreaterOrEqual(t, time.Since(start), ackTimeout, "it waited for the replica")
	require.Equal(t, 3, slow)
	require.Equal(t, 10, other)

	// Claims on other masters are not held up while a claim waits on the stopped one.
	var wg sync.WaitGroup
	var concurrentMax time.Duration
	var mu sync.Mutex
	wg.Go(func() {
		for i := 0; i < 50; i++ {
			id := fmt.Sprint("waiting-", i)
			if node, _ := c.MasterForKey(ctx, d.keys.Ready(d.keys.ShardOf(id))); node.Options().Addr == master {
				_, _ = d.Enqueue(ctx, Event{Type: "a.x", ID: id})
				return
			}
		}
	})
	time.Sleep(50 * time.Millisecond)
	for i := 0; i < 30; i++ {
		id := fmt.Sprint("alongside-", i)
		if node, _ := c.MasterForKey(ctx, d.keys.Ready(d.keys.ShardOf(id))); node.Options().Addr == master {
			continue
		}
		start := time.Now()
		_, err := d.Enqueue(ctx, Event{Type: "a.x", ID: id})
		require.NoError(t, err)
		mu.Lock()
		concurrentMax = max(concurrentMax, time.Since(start))
		mu.Unlock()
	}
	wg.Wait()
	t.Logf("other masters' claims while one waits: slowest %s", concurrentMax)
	assert.Less(t, concurrentMax, ackTimeout/2)
}

// TestFailover: a master is killed (SIGKILL) mid-run while producers dispatch and two workers run,
// all on go-redis's default ClusterClient options. Every accepted pair reaches the receiver exactly
// once, and no producer sees Dispatch fail for more than 10 s.
func TestFailover(t *testing.T) {
	fc := newFailoverCluster(t)
	ctx := context.Background()
	c := fc.client(t)
	tr := &testRedis{rdb: c, prefix: "wht_failover_" + randomHex(3)}
	t.Cleanup(func() { tr.deleteKeys(t) })
	opts := Options{Timeout: 5 * time.Second, RetrySchedule: []time.Duration{time.Second, time.Second, 2 * time.Second}}
	d := newTestDispatcherOn(t, c, tr, opts)
	rc := newReceiver(t)
	const targets = 2
	for range targets {
		mustCreate(t, d, rc, "f.*")
	}
	runCtx, stopRun := context.WithCancel(ctx)
	var workers sync.WaitGroup
	for range 2 {
		w := newTestDispatcherOn(t, fc.client(t), tr, opts)
		workers.Go(func() { _ = w.Run(runCtx) })
	}
	t.Cleanup(func() { stopRun(); workers.Wait() })

	// Producers: each dispatches its events in turn, an event again until it is accepted.
	const producers, runFor, killAt = 4, 12 * time.Second, 3 * time.Second
	start := time.Now()
	var mu sync.Mutex
	accepted := map[string]bool{} // delivery ids
	var longestOutage, longestCall time.Duration
	var failures int
	var prod sync.WaitGroup
	for p := range producers {
		prod.Go(func() {
			for i := 0; time.Since(start) < runFor; i++ {
				evt := Event{Type: "f.x", ID: fmt.Sprintf("fo-%d-%d", p, i)}
				var failingSince time.Time
				for {
					cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
					callStart := time.Now()
					res, err := d.Dispatch(cctx, evt)
					cancel()
					mu.Lock()
					longestCall = max(longestCall, time.Since(callStart))
					mu.Unlock()
					if err == nil {
						mu.Lock()
						for _, r := range res {
							accepted[r.Delivery.ID] = true
						}
						if !failingSince.IsZero() {
							longestOutage = max(longestOutage, time.Since(failingSince))
						}
						mu.Unlock()
						break
					}
					mu.Lock()
					failures++
					mu.Unlock()
					if !errors.Is(err, ErrNotAccepted) {
						t.Errorf("dispatch %s: %v", evt.ID, err)
						return
					}
					if failingSince.IsZero() {
						failingSince = time.Now()
					}
					if time.Since(failingSince) > 30*time.Second {
						t.Errorf("dispatch %s failing for 30s: %v", evt.ID, err)
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}

	// Kill the master of shard 0 mid-run, and wait for its replica's promotion.
	time.Sleep(killAt)
	master, replica := fc.masterAndReplica(t, c, d.keys.Ready(0))
	pid := fc.pids[master]
	require.NotZero(t, pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	killed := time.Now()
	t.Logf("killed master %s (pid %d) at %s; its replica is %s", master, pid, killed.Sub(start).Round(time.Millisecond), replica)
	promoted := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ns, err := fc.nodes(ctx)
		if err != nil {
			continue
		}
		for _, n := range ns {
			if n.addr == replica && n.isMaster && !n.failed {
				promoted = true
			}
		}
		if promoted {
			break
		}
	}
	require.True(t, promoted, "the replica was promoted within 30s")
	t.Logf("replica %s promoted %s after the kill", replica, time.Since(killed).Round(time.Millisecond))
	prod.Wait()

	// Every accepted pair arrives, once: the workers take what the failover left leased.
	mu.Lock()
	want := len(accepted)
	mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && len(rc.perDelivery()) < want {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(opts.Timeout) // room for a second send to show
	per := rc.perDelivery()
	lost, twice := 0, 0
	for id := range accepted {
		switch n := per[id]; {
		case n == 0:
			lost++
			t.Errorf("pair %s accepted but never delivered", id)
		case n > 1:
			twice++
			t.Errorf("pair %s delivered %d times", id, n)
		}
	}
	for id := range per {
		if !accepted[id] {
			t.Logf("delivered %s, a pair whose Dispatch was not accepted (its retry was)", id)
		}
	}
	t.Logf("pairs accepted %d, delivered %d, lost %d, sent twice %d; failed Dispatch calls %d, longest a producer saw Dispatch fail %s, longest Dispatch call %s",
		want, len(per), lost, twice, failures, longestOutage.Round(time.Millisecond), longestCall.Round(time.Millisecond))
	assert.Less(t, longestOutage, 10*time.Second, "Dispatch is back within seconds")
	assert.Less(t, longestCall, 10*time.Second, "no Dispatch hangs through the failover")
}
