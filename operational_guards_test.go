package webhooks

// Operational webhooks' guards: no feedback loops, one event per transition across replicas, reserved
// types, no cost when unused, an enqueue failure logged (the events themselves: operational_test.go).

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/types"
)

// TestOperationalLoopGuard: two failing webhooks subscribed to delivery.failed each hear of the
// other's failed delivery once, never of their own, and their failing operational deliveries tell no
// one (drain fails if they fed each other).
func TestOperationalLoopGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newOpsDispatcher(t, tr, Options{})
	prc, qrc := failingReceiver(t, http.StatusInternalServerError), failingReceiver(t, http.StatusInternalServerError)
	p := hookOn(t, d, prc.srv.URL, "", "x", "delivery.failed")
	q := hookOn(t, d, qrc.srv.URL, "", "x", "delivery.*")

	_, err := d.Dispatch(ctx, Event{Type: "x", ID: "e1"})
	require.NoError(t, err)
	drain(t, d)
	for _, c := range []struct {
		rc    *receiver
		wh    *Webhook
		other string
	}{{prc, p, q.ID}, {qrc, q, p.ID}} {
		evs := opEvents(t, c.rc, c.wh, EventDeliveryFailed)
		require.Len(t, evs, 1, "webhook %s: one delivery.failed, about the other's delivery of e1", c.wh.ID)
		assert.Equal(t, c.other, evs[0].Data.WebhookID)
		assert.Equal(t, "x", evs[0].Data.EventType)
		assert.Equal(t, 2, c.rc.count(), "e1 and one operational event")
	}
}

// TestOperationalDedupAcrossReplicas: three Dispatchers on their own clients each notice that the same
// webhook's run of failures passed half of DisableAfter, and each claims webhook.failing: the operator
// gets one.
func TestOperationalDedupAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	clock := newTestClock()
	var ds []*Dispatcher
	for range 3 {
		d := newTestDispatcherOn(t, tr.newClient(t), tr, Options{OperationalEvents: true, RetrySchedule: []time.Duration{},
			DisableAfter: time.Hour})
		d.now = clock.Now
		ds = append(ds, d)
	}
	bad := failingReceiver(t, http.StatusInternalServerError)
	failing := hookOn(t, ds[0], bad.srv.URL, "", "x")
	op := newReceiver(t)
	opWh := hookOn(t, ds[0], op.srv.URL, "", "webhook.failing")
	since := clock.Now()
	_, err := ds[0].Dispatch(ctx, Event{Type: "x", ID: "e0"})
	require.NoError(t, err)
	clock.Advance(40 * time.Minute)

	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() {
			for j := range 2 {
				_, err := d.Dispatch(ctx, Event{Type: "x", ID: "e" + itoa(int64(10*i+j+1))})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	for i, d := range ds {
		assert.Equal(t, since.UnixMilli(), d.notify.FailingWarned(failing.ID), "replica %d noticed the run and claimed the event", i)
	}
	drain(t, ds[1])
	evs := opEventsAt(t, clock.Now, op, opWh)
	require.Len(t, evs, 1, "one event, whichever replicas noticed")
	assert.Equal(t, 7, bad.count())
}

// TestOperationalCircuitOpenedOnceAcrossReplicas: replicas failing the same webhook concurrently open
// its circuit once, and the operator hears of it once.
func TestOperationalCircuitOpenedOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	var ds []*Dispatcher
	for range 3 {
		ds = append(ds, newTestDispatcherOn(t, tr.newClient(t), tr, Options{OperationalEvents: true,
			RetrySchedule: []time.Duration{time.Hour}, BreakAfter: 3, BreakFor: time.Minute}))
	}
	bad := failingReceiver(t, http.StatusInternalServerError)
	hookOn(t, ds[0], bad.srv.URL, "", "x")
	op := newReceiver(t)
	opWh := hookOn(t, ds[0], op.srv.URL, "", "circuit.opened")
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() {
			for j := range 3 {
				_, err := d.Dispatch(ctx, Event{Type: "x", ID: "e" + itoa(int64(10*i+j))})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	drain(t, ds[2])
	assert.Len(t, opEvents(t, op, opWh), 1)
}

func TestDispatchRefusesOperationalTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	on, off := newOpsDispatcher(t, tr, Options{}), newTestDispatcher(t, tr, Options{})
	for _, typ := range types.OperationalTypes() {
		for _, call := range []func(context.Context, Event) ([]Result, error){on.Dispatch, on.Enqueue} {
			_, err := call(ctx, Event{Type: typ, ID: "forged"})
			assert.ErrorIs(t, err, ErrInvalidEvent, typ)
		}
		_, err := off.Dispatch(ctx, Event{Type: typ, ID: "own"})
		assert.NoError(t, err, "with operational events off, %s is an ordinary type", typ)
	}
}

// TestOperationalCostsNothingUnused: with operational events on and no webhook subscribed to them,
// a Dispatch makes as many round trips as with them off, for a healthy webhook and a failing one.
func TestOperationalCostsNothingUnused(t *testing.T) {
	ctx := context.Background()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	rt := &roundTrips{}
	c.AddHook(rt)
	on := newTestDispatcherOn(t, c, tr, Options{OperationalEvents: true, RetrySchedule: []time.Duration{}})
	off := newTestDispatcherOn(t, c, tr, Options{RetrySchedule: []time.Duration{}})
	hookOn(t, on, newReceiver(t).srv.URL, "", "ok")
	hookOn(t, on, failingReceiver(t, http.StatusInternalServerError).srv.URL, "", "bad")
	hookOn(t, on, newReceiver(t).srv.URL, "", "other.*") // subscribed, but to no operational type
	ids := eventIDsInShard(t, "cost", 0, 12)
	trips := func(d *Dispatcher, typ string, warm, id string) int32 {
		_, err := d.Dispatch(ctx, Event{Type: typ, ID: warm}) // caches, connections
		require.NoError(t, err)
		rt.n.Store(0)
		_, err = d.Dispatch(ctx, Event{Type: typ, ID: id})
		require.NoError(t, err)
		return rt.n.Load()
	}
	for i, typ := range []string{"ok", "bad"} {
		k := 6 * i
		offTrips := trips(off, typ, ids[k], ids[k+1])
		onTrips := trips(on, typ, ids[k+2], ids[k+3])
		assert.Equal(t, offTrips, onTrips, "%s: round trips with operational events on, unused", typ)
		assert.Equal(t, offTrips, trips(off, typ, ids[k+4], ids[k+5]), "%s: the count is stable", typ)
	}
}

// refuseOperationalClaims is a go-redis hook that fails every command carrying an operational event's
// body, as a Redis that refuses the claim would.
type refuseOperationalClaims struct{ passHook }

func carriesOperational(cmd redis.Cmder) bool {
	for _, a := range cmd.Args() {
		switch a := a.(type) {
		case string:
			if strings.Contains(a, `"type":"delivery.failed"`) {
				return true
			}
		case []byte:
			if bytes.Contains(a, []byte(`"type":"delivery.failed"`)) {
				return true
			}
		}
	}
	return false
}

func (refuseOperationalClaims) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if carriesOperational(cmd) {
			cmd.SetErr(errors.New("refused by the test"))
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

func (refuseOperationalClaims) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, carriesOperational) {
			for _, c := range cmds {
				c.SetErr(errors.New("refused by the test"))
			}
			return cmds[0].Err()
		}
		return next(ctx, cmds)
	}
}

// TestOperationalEnqueueFailureIsLogged: an operational event that cannot be claimed is logged, and
// the delivery it is about is recorded all the same.
func TestOperationalEnqueueFailureIsLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	c.AddHook(refuseOperationalClaims{})
	logs := &handlerLogBuffer{}
	d := newTestDispatcherOn(t, c, tr, Options{OperationalEvents: true, RetrySchedule: []time.Duration{},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	bad := failingReceiver(t, http.StatusInternalServerError)
	hookOn(t, d, bad.srv.URL, "", "x")
	op := newReceiver(t)
	hookOn(t, d, op.srv.URL, "", "delivery.failed")

	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "e1"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	assert.Equal(t, StatusFailed, res[0].Delivery.Status)
	got, err := d.Deliveries().Get(ctx, res[0].Delivery.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusFailed, got.Status, "the failed delivery is recorded")
	drain(t, d)
	assert.Zero(t, op.count())
	assert.Contains(t, logs.String(), "webhooks: operational event not enqueued")
	assert.Contains(t, logs.String(), "refused by the test")
}
