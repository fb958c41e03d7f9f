package webhooks

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blipProxy forwards TCP to a Redis; down(d) drops every connection and refuses new ones for d.
type blipProxy struct {
	ln        net.Listener
	mu        sync.Mutex
	conns     map[net.Conn]bool
	downUntil time.Time
}

func newBlipProxy(t *testing.T, target string) *blipProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &blipProxy{ln: ln, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.closeAll() })
	go func() {
		for {
			cc, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			down := time.Now().Before(p.downUntil)
			p.mu.Unlock()
			if down {
				cc.Close()
				continue
			}
			sc, err := net.Dial("tcp", target)
			if err != nil {
				cc.Close()
				continue
			}
			p.mu.Lock()
			p.conns[cc], p.conns[sc] = true, true
			p.mu.Unlock()
			go func() { _, _ = io.Copy(sc, cc); sc.Close(); cc.Close() }()
			go func() { _, _ = io.Copy(cc, sc); sc.Close(); cc.Close() }()
		}
	}()
	return p
}

// newBlipProxyToTestRedis is a blipProxy in front of the test's Redis; it skips the test on a cluster.
func newBlipProxyToTestRedis(t *testing.T, tr *testRedis) *blipProxy {
	t.Helper()
	if tr.isCluster() {
		t.Skip("the proxy stands in front of one server")
	}
	if tr.mini != nil {
		return newBlipProxy(t, tr.mini.Addr())
	}
	return newBlipProxy(t, tr.rdb.(*redis.Client).Options().Addr)
}

func (p *blipProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// down drops every connection now and refuses new ones for d.
func (p *blipProxy) down(d time.Duration) {
	p.mu.Lock()
	p.downUntil = time.Now().Add(d)
	p.mu.Unlock()
	p.closeAll()
}

// TestRedisBlipDuringOutcomeWrites: Redis drops away for 1–2 s just as attempts end (the receiver
// starts the outage while it answers). The outcome writes are retried within the lease: every pair
// is recorded as sent, and no pair is sent twice — not inline, not by a worker after the lease.
func TestRedisBlipDuringOutcomeWrites(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	p := newBlipProxyToTestRedis(t, tr)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: p.ln.Addr().String()}) // go-redis defaults
	t.Cleanup(func() { c.Close() })
	d := newTestDispatcherOn(t, c, tr, Options{Timeout: 2 * time.Second}) // lease 4s
	// Real time plus what the test adds: it jumps past every lease at the end rather than wait 4.5s.
	clock := &offsetClock{}
	d.now = clock.Now
	rc := newReceiver(t)
	const targets = 3
	for range targets {
		mustCreate(t, d, rc, "b.*")
	}
	var blips atomic.Int32
	outages := []time.Duration{time.Second, 1500 * time.Millisecond, 2 * time.Second}
	rc.setHook(func(r *http.Request) {
		// The first request of each event starts an outage; its answer (and the others') then
		// reaches a worker whose outcome write finds Redis gone.
		if n := blips.Add(1); n%targets == 1 {
			p.down(outages[(n/targets)%int32(len(outages))])
		}
	})
	var ids []string
	for i := range len(outages) {
		res, err := d.Dispatch(ctx, Event{Type: "b.x", ID: fmt.Sprint("blip-", i)})
		require.NoError(t, err, "the claims came before the outage")
		for _, r := range res {
			assert.NoError(t, r.Err, "the outcome was recorded within the lease")
			assert.Equal(t, StatusSuccess, r.Delivery.Status)
			ids = append(ids, r.Delivery.ID)
		}
	}
	// Past every lease, a worker finds nothing to send again: every call has returned, its outcomes
	// recorded, so the clock jumps there.
	clock.Advance(d.lease + 500*time.Millisecond)
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "nothing left to a worker")
	per := rc.perDelivery()
	assert.Len(t, per, len(ids))
	for _, id := range ids {
		assert.Equal(t, 1, per[id], "delivery %s sent once", id)
		dl, err := d.Deliveries().Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, StatusSuccess, dl.Status)
	}
}

// TestReplicaAcksWithoutReplicas: with ReplicaAcks set and no replica to acknowledge (the test Redis
// has none), a claim is not accepted (ErrNotAccepted) after ReplicaAckTimeout, but its record is
// kept: a worker delivers it, once, and records the outcome (logged as unacknowledged).
func TestReplicaAcksWithoutReplicas(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	ctx := context.Background()
	d := newTestDispatcher(t, tr, Options{ReplicaAcks: 1, ReplicaAckTimeout: 100 * time.Millisecond})
	rc := newReceiver(t)
	w := mustCreate(t, d, rc, "r.*")
	start := time.Now()
	res, err := d.Enqueue(ctx, Event{Type: "r.x", ID: "unacked"})
	require.ErrorIs(t, err, ErrNotAccepted)
	require.Len(t, res, 1)
	assert.False(t, res[0].Accepted())
	if tr.mini == nil {
		assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "it waited for a replica")
	}
	dl, err := d.Deliveries().Find(ctx, w.ID, "unacked")
	require.NoError(t, err, "the record is kept")
	assert.Equal(t, StatusPending, dl.Status)
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	dl, err = d.Deliveries().Get(ctx, dl.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, dl.Status)
	assert.Equal(t, 1, rc.count())
}
