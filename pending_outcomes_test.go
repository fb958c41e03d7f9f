package webhooks

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/worker"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOutcomesSurviveAnOutageLongerThanTheLease (DESIGN guarantee 4): Redis drops away for three leases
// just as attempts end, inline (Dispatch) and the worker's (Enqueue), with two Dispatchers running Run
// behind the same outage. The outcomes Redis could not take are kept and written once it answers,
// before any worker leases again: every delivery is recorded as sent, and no request is repeated.
func TestOutcomesSurviveAnOutageLongerThanTheLease(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	p := newBlipProxyToTestRedis(t, tr)
	ctx := context.Background()
	var ds []*Dispatcher
	for range 2 {
		c := redis.NewClient(&redis.Options{Addr: p.ln.Addr().String()})
		t.Cleanup(func() { c.Close() })
		ds = append(ds, newTestDispatcherOn(t, c, tr, Options{Timeout: 300 * time.Millisecond})) // lease 1.3s
	}
	outage := 3 * ds[0].lease
	rc := newReceiver(t)
	const targets = 3
	for range targets {
		mustCreate(t, ds[0], rc, "o.*")
	}
	var requests atomic.Int32
	var armed atomic.Bool
	rc.setHook(func(r *http.Request) {
		// The first request after the test arms it starts an outage; every answer then reaches a
		// Dispatcher whose outcome write finds Redis gone for three leases.
		requests.Add(1)
		if armed.CompareAndSwap(true, false) {
			p.down(outage)
		}
		time.Sleep(50 * time.Millisecond)
	})
	stop := runReplicas(t, ds)
	defer stop()

	armed.Store(true)
	res, err := ds[0].Dispatch(ctx, Event{Type: "o.x", ID: "inline"})
	require.NoError(t, err, "the claim came before the outage")
	require.Len(t, res, targets)
	time.Sleep(outage + 2*worker.OutageGrace) // Redis is back, the kept outcomes written
	armed.Store(true)
	_, err = ds[1].Enqueue(ctx, Event{Type: "o.x", ID: "worker"})
	require.NoError(t, err)

	var ids []string
	for _, id := range []string{"inline", "worker"} {
		var found []string
		eventually(t, 3*outage+10*time.Second, func() bool { // Redis may be down: read again until it answers
			list, err := ds[0].Webhooks().List(ctx)
			found = found[:0]
			for _, w := range list {
				if dl, err := ds[0].Deliveries().Find(ctx, w.ID, id); err == nil && dl.Status == StatusSuccess {
					found = append(found, dl.ID)
				}
			}
			return err == nil && len(found) == targets
		}, "event "+id+" recorded as sent to every webhook")
		ids = append(ids, found...)
	}
	time.Sleep(ds[0].lease + worker.OutageGrace) // a repeat would come after a lease
	per := rc.perDelivery()
	t.Logf("requests %d for %d deliveries", requests.Load(), len(ids))
	for _, id := range ids {
		assert.Equal(t, 1, per[id], "delivery %s sent once", id)
	}
	assert.Len(t, per, len(ids))
}
