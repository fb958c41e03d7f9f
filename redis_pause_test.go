package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedisPauseRepeatsNoRequest: 40 inline dispatches to a receiver that answers after 400 ms; while
// they are all at the receiver, Redis is paused (CLIENT PAUSE ALL) for longer than their lease (Timeout
// 1 s, lease 2 s) and the client's read timeout (3 s), with two Dispatchers' workers running. No other attempt began while Redis was
// paused, so none may begin once it answers again: every event reaches the receiver once. It pauses a
// redis-server of its own (a pause stops every client), so it runs in the real-Redis pass only.
func TestRedisPauseRepeatsNoRequest(t *testing.T) {
	addr, admin := ownRedis(t)
	t.Parallel()
	ctx := context.Background()
	eventually(t, 10*time.Second, func() bool { return admin.Ping(ctx).Err() == nil }, "redis-server answers")

	const events = 40
	rc := newReceiver(t)
	var arrived sync.WaitGroup
	arrived.Add(events)
	var once sync.Map
	hold := func(r *http.Request) {
		if _, seen := once.LoadOrStore(r.Header.Get("webhook-id"), true); !seen {
			arrived.Done()
		}
		time.Sleep(400 * time.Millisecond)
	}
	rc.hook.Store(&hold)

	var ds []*Dispatcher
	for range 2 {
		// go-redis's default timeouts: a command waiting out the pause fails after 3 s. Concurrency
		// 4 × events: an in-flight floor (Concurrency/4) of events, so all 40 are at the receiver at once.
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = c.Close() })
		d, err := New(c, Options{KeyPrefix: "pause", AllowPrivateNetworks: true, Timeout: time.Second,
			Concurrency: 4 * events, RetrySchedule: []time.Duration{50 * time.Millisecond}})
		require.NoError(t, err)
		ds = append(ds, d)
	}
	wh, err := ds[0].Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"p.*"}})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() { assert.NoError(t, d.Run(runCtx)) })
	}
	for i := range events {
		wg.Go(func() {
			_, err := ds[i%2].Dispatch(ctx, Event{Type: "p.x", ID: fmt.Sprintf("p%02d", i)})
			assert.NoError(t, err)
		})
	}
	waited := make(chan struct{})
	go func() { arrived.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		t.Fatal("the 40 requests did not all reach the receiver")
	}
	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", 5000, "ALL").Err())

	eventually(t, 30*time.Second, func() bool {
		for i := range events {
			dl, err := ds[0].Deliveries().Find(ctx, wh.ID, fmt.Sprintf("p%02d", i))
			if err != nil || dl.Status != StatusSuccess {
				return false
			}
		}
		return true
	}, "every delivery recorded a success after the pause")
	time.Sleep(time.Second) // a repeat the workers would make comes within a pass or two
	stop()
	wg.Wait()
	for id, n := range rc.perDelivery() {
		assert.Equal(t, 1, n, "delivery %s reached the receiver once", id)
	}
	assert.Len(t, rc.perDelivery(), events)
}
