package webhooks

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedisFullRefusesThenResumes: a Redis of the test's own (noeviction) reaches its maxmemory while
// an attempt is at its receiver. Its outcome, refused (OOM), is kept and written once memory is freed,
// not sent again; a Dispatch meanwhile fails with ErrNotAccepted naming the refusal and writes
// nothing; the worker does not spin; and once memory is freed, that event is delivered once. It starts
// a redis-server of its own, so it runs in the real-Redis pass only.
func TestRedisFullRefusesThenResumes(t *testing.T) {
	addr, admin := ownRedis(t)
	t.Parallel()
	ctx := context.Background()
	sent := &cmdCounter{}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	rdb.AddHook(sent)
	t.Cleanup(func() { _ = rdb.Close() })
	d, err := New(rdb, Options{KeyPrefix: "full", AllowPrivateNetworks: true, Timeout: 300 * time.Millisecond,
		RetrySchedule: []time.Duration{time.Hour}})
	require.NoError(t, err)
	rc := newReceiver(t)
	_, err = d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"f.*"}})
	require.NoError(t, err)

	// Redis is full while the first attempt is at its receiver: its outcome is refused. maxmemory of one
	// byte makes Redis refuse every write with its OOM error at once (filling it with data took long
	// enough on a loaded machine for the attempt's 300 ms Timeout to end first).
	fill := func() { require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "1").Err()) }
	var filled atomic.Bool
	rc.setHook(func(*http.Request) {
		if filled.CompareAndSwap(false, true) {
			fill()
		}
	})
	runCtx, stop := context.WithCancel(ctx)
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = d.Run(runCtx) }()
	defer func() { stop(); <-runDone }()
	first, err := d.Dispatch(ctx, Event{Type: "f.x", ID: "in-flight"})
	require.NoError(t, err, "claimed before Redis filled up")
	require.True(t, filled.Load())

	keys := func() []string { return admin.Keys(ctx, "{full*").Val() }
	before := keys()
	_, err = d.Dispatch(ctx, Event{Type: "f.x", ID: "refused"})
	require.ErrorIs(t, err, ErrNotAccepted)
	assert.Contains(t, err.Error(), "OOM", "the refusal is named")
	assert.ElementsMatch(t, before, keys(), "a refused Dispatch writes nothing")

	sent.n.Store(0)
	time.Sleep(2 * time.Second)
	t.Logf("commands sent by the Dispatcher in 2 s of a full Redis: %d", sent.n.Load())
	assert.Less(t, sent.n.Load(), int64(200), "the worker does not spin on a full Redis")

	require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "0").Err()) // memory freed: no limit
	res, err := d.Dispatch(ctx, Event{Type: "f.x", ID: "refused"})
	require.NoError(t, err, "accepted once memory is freed")
	require.NoError(t, res[0].Err)
	eventually(t, 10*time.Second, func() bool {
		dl, err := d.Deliveries().Get(ctx, first[0].Delivery.ID)
		return err == nil && dl.Status == StatusSuccess
	}, "the kept outcome written once memory was freed")
	time.Sleep(d.lease + time.Second) // a repeat would come after the lease
	per := rc.perDelivery()
	assert.Equal(t, 1, per[first[0].Delivery.ID], "the attempt whose outcome Redis refused is not sent again")
	assert.Equal(t, 1, per[res[0].Delivery.ID], "the refused event, dispatched again, delivered once")
}

func atoiOr(s string) int64 {
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = 10*n + int64(c-'0')
	}
	return n
}
