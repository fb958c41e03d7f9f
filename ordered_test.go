package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// orderedEvent is an event of key in a test.
func orderedEvent(id, key string) Event {
	return Event{Type: "order.test", ID: id, OrderKey: key, Data: map[string]string{"id": id}}
}

// findDelivery is the delivery of an event to a webhook.
func findDelivery(t *testing.T, d *Dispatcher, webhookID, eventID string) *Delivery {
	t.Helper()
	dl, err := d.Deliveries().Find(context.Background(), webhookID, eventID)
	require.NoError(t, err)
	return dl
}

// position is a delivery's place in its key's sequence.
func position(t *testing.T, d *Dispatcher, webhookID, eventID string) int {
	t.Helper()
	pos, err := d.Deliveries().Position(context.Background(), findDelivery(t, d, webhookID, eventID).ID)
	require.NoError(t, err)
	return pos
}

// eventOrder lists the event ids of a receiver's requests, in the order they came.
func eventOrder(t *testing.T, rc *receiver) []string {
	t.Helper()
	var out []string
	for _, r := range rc.requests() {
		var body struct{ ID string }
		require.NoError(t, json.Unmarshal(r.Body, &body))
		out = append(out, body.ID)
	}
	return out
}

// TestOrderedDeliveryWaitsForItsHead: a delivery of a key whose head is retrying is not attempted,
// inline or by the worker, until the head succeeds; then it is due at once. Other keys and unordered
// events go inline meanwhile.
func TestOrderedDeliveryWaitsForItsHead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "order.test")
	rc.status.Store(http.StatusInternalServerError)

	res, err := d.Dispatch(ctx, orderedEvent("evt_a1", "a"))
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	assert.Equal(t, StatusPending, res[0].Delivery.Status)
	assert.Equal(t, "a", res[0].Delivery.OrderKey)
	require.Equal(t, 1, rc.count(), "the head is attempted inline")

	res, err = d.Dispatch(ctx, orderedEvent("evt_a2", "a"))
	require.NoError(t, err)
	require.ErrorIs(t, res[0].Err, ErrDeferred, "queued behind the retrying head")
	assert.True(t, res[0].Delivery.NextAttemptAt.IsZero())
	_, err = d.Enqueue(ctx, orderedEvent("evt_a3", "a"))
	require.NoError(t, err)
	require.Equal(t, 1, rc.count(), "nothing is sent behind the head")
	assert.Equal(t, []int{0, 1, 2}, []int{position(t, d, wh.ID, "evt_a1"), position(t, d, wh.ID, "evt_a2"), position(t, d, wh.ID, "evt_a3")})
	st, err := d.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), st.BlockedKeys)
	var detail struct {
		Delivery
		Why           string `json:"why"`
		OrderPosition int    `json:"order_position"`
	}
	newAPI(t, d).do("GET", "/deliveries/"+findDelivery(t, d, wh.ID, "evt_a3").ID, "").ok(t, http.StatusOK, &detail)
	assert.Equal(t, "a", detail.OrderKey, "the admin API shows the key")
	assert.Equal(t, 2, detail.OrderPosition, "and the place in it")
	assert.Contains(t, detail.Why, "order key a", "and why it waits")

	_, err = d.Dispatch(ctx, orderedEvent("evt_b1", "b"))
	require.NoError(t, err)
	_, err = d.Dispatch(ctx, Event{Type: "order.test", ID: "evt_u1"})
	require.NoError(t, err)
	require.Equal(t, 3, rc.count(), "another key and an unordered event do not wait")

	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "the waiting deliveries are not due, the head's retry is a minute away")

	rc.status.Store(http.StatusOK)
	clock.Advance(2 * time.Minute)
	for range 5 {
		_, err := d.ProcessDue(ctx)
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"evt_a1", "evt_b1", "evt_u1"}, eventOrder(t, rc)[:3], "the first attempts, inline")
	var keyA []string
	for _, id := range eventOrder(t, rc) {
		if id[:5] == "evt_a" {
			keyA = append(keyA, id)
		}
	}
	assert.Equal(t, []string{"evt_a1", "evt_a1", "evt_a2", "evt_a3"}, keyA, "key a in claim order, each after the previous succeeded")
	for _, id := range []string{"evt_a1", "evt_a2", "evt_a3", "evt_b1", "evt_u1"} {
		assert.Equal(t, StatusSuccess, findDelivery(t, d, wh.ID, id).Status, id)
	}
	assert.Equal(t, -1, position(t, d, wh.ID, "evt_a3"))
	st, err = d.Stats(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.BlockedKeys)
}

// TestOrderedHeadFailingForGood: with the default, the next delivery of the key goes on once the head
// failed for good; with BlockKeyOnFailure it waits until the head is redelivered and succeeds.
// Redeliver of a failed delivery whose key went on puts it at the end of its key's sequence.
func TestOrderedHeadFailingForGood(t *testing.T) {
	t.Parallel()
	for _, block := range []bool{false, true} {
		t.Run(map[bool]string{false: "next goes on", true: "key blocks"}[block], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			d := newTestDispatcher(t, tr, Options{RetrySchedule: []time.Duration{}, BlockKeyOnFailure: block})
			d.now = newTestClock().Now // held still: however slow the machine, each pass's lease is whole when its attempt starts
			rc := newReceiver(t)
			wh := mustCreate(t, d, rc, "order.test")
			rc.status.Store(http.StatusInternalServerError)
			for _, id := range []string{"evt_k1", "evt_k2", "evt_k3"} {
				_, err := d.Enqueue(ctx, orderedEvent(id, "k"))
				require.NoError(t, err)
			}
			n, err := d.ProcessDue(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, n, "only the head is due")
			require.Equal(t, StatusFailed, findDelivery(t, d, wh.ID, "evt_k1").Status)
			if !block {
				rc.status.Store(http.StatusOK)
				n, err = d.ProcessDue(ctx)
				require.NoError(t, err)
				require.Equal(t, 1, n, "the next goes on")
				require.Equal(t, []string{"evt_k1", "evt_k2"}, eventOrder(t, rc))
				assert.Equal(t, -1, position(t, d, wh.ID, "evt_k1"))
				_, err = d.Redeliver(ctx, findDelivery(t, d, wh.ID, "evt_k1").ID)
				require.ErrorIs(t, err, ErrDeferred, "behind evt_k3")
				assert.Equal(t, 1, position(t, d, wh.ID, "evt_k1"))
				for range 3 {
					_, err = d.ProcessDue(ctx)
					require.NoError(t, err)
				}
				require.Equal(t, []string{"evt_k1", "evt_k2", "evt_k3", "evt_k1"}, eventOrder(t, rc))
				assert.Equal(t, StatusSuccess, findDelivery(t, d, wh.ID, "evt_k1").Status)
				return
			}
			rc.status.Store(http.StatusOK)
			n, err = d.ProcessDue(ctx)
			require.NoError(t, err)
			require.Zero(t, n, "the key is blocked by its failed head")
			assert.Equal(t, []int{0, 1}, []int{position(t, d, wh.ID, "evt_k1"), position(t, d, wh.ID, "evt_k2")})
			st, err := d.Stats(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(1), st.BlockedKeys)
			dl, err := d.Redeliver(ctx, findDelivery(t, d, wh.ID, "evt_k1").ID)
			require.NoError(t, err, "the head is redelivered inline")
			require.Equal(t, StatusSuccess, dl.Status)
			for range 3 {
				_, err = d.ProcessDue(ctx)
				require.NoError(t, err)
			}
			require.Equal(t, []string{"evt_k1", "evt_k1", "evt_k2", "evt_k3"}, eventOrder(t, rc))
		})
	}
}

// TestOrderKeyOfAnEventID: an event id keeps the order key of its first dispatch: the same key is a
// duplicate, another key or none is refused, and an id first dispatched unordered refuses a key.
func TestOrderKeyOfAnEventID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "order.test")
	for _, inline := range []bool{true, false} {
		send := d.Enqueue
		if inline {
			send = d.Dispatch
		}
		id := map[bool]string{true: "evt_d1", false: "evt_e1"}[inline]
		res, err := send(ctx, orderedEvent(id, "a"))
		require.NoError(t, err)
		require.False(t, res[0].Duplicate)
		res, err = send(ctx, orderedEvent(id, "a"))
		require.NoError(t, err)
		require.True(t, res[0].Duplicate, "same id, same key")
		for _, other := range []string{"b", ""} {
			_, err = send(ctx, orderedEvent(id, other))
			require.ErrorIs(t, err, ErrOrderKeyConflict, "same id, key %q", other)
			require.ErrorIs(t, err, ErrNotAccepted)
		}
		dl := findDelivery(t, d, wh.ID, id)
		assert.Equal(t, "a", dl.OrderKey)
	}
	_, err := d.Dispatch(ctx, Event{Type: "order.test", ID: "evt_u1"})
	require.NoError(t, err)
	_, err = d.Dispatch(ctx, orderedEvent("evt_u1", "a"))
	require.ErrorIs(t, err, ErrOrderKeyConflict, "an id dispatched unordered")
	assert.Equal(t, []string{"evt_d1", "evt_u1"}, eventOrder(t, rc), "the dispatched events, once each (evt_e1 waits for a worker)")
	_, err = d.Dispatch(ctx, orderedEvent("evt_x", string([]byte{'a', 0})))
	require.ErrorIs(t, err, ErrInvalidEvent)
}

// TestOrderedLostHeadDoesNotBlockItsKey: a head whose record is gone (expired; the lease script drops
// its queue entry) is popped by the next claim on its key, and the deliveries behind it go on.
func TestOrderedLostHeadDoesNotBlockItsKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "order.test")
	for _, id := range []string{"evt_l1", "evt_l2"} {
		_, err := d.Enqueue(ctx, orderedEvent(id, "l"))
		require.NoError(t, err)
	}
	head := findDelivery(t, d, wh.ID, "evt_l1")
	shard, err := d.keys.DeliveryShard(head.ID)
	require.NoError(t, err)
	require.NoError(t, tr.rdb.Del(ctx, d.keys.Delivery(shard, head.ID)).Err()) // as if it expired
	n, err := d.ProcessDue(ctx)                                                // the lease script drops it
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = d.ProcessDue(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "evt_l2 waits behind the lost head until a claim on its key")

	_, err = d.Enqueue(ctx, orderedEvent("evt_l3", "l"))
	require.NoError(t, err)
	for range 3 {
		_, err = d.ProcessDue(ctx)
		require.NoError(t, err)
	}
	require.Equal(t, []string{"evt_l2", "evt_l3"}, eventOrder(t, rc))
}

// TestRecoverOrderedDeliveries: Recover re-sends a key's failed deliveries, each inline when nothing
// of its key is pending, else queued behind (not reported as an error), and all are delivered.
func TestRecoverOrderedDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{RetrySchedule: []time.Duration{}})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "order.test")
	rc.status.Store(http.StatusInternalServerError)
	ids := []string{"evt_r1", "evt_r2", "evt_r3"}
	for _, id := range ids {
		_, err := d.Dispatch(ctx, orderedEvent(id, "r"))
		require.NoError(t, err)
	}
	for range 3 {
		_, err := d.ProcessDue(ctx)
		require.NoError(t, err)
	}
	require.Len(t, rc.requests(), 3, "each failed for good, the next going on")
	rc.status.Store(http.StatusOK)
	n, err := d.Recover(ctx, wh.ID, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), 10)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.GreaterOrEqual(t, len(rc.requests()), 4, "the first inline, the others inline or queued behind it")
	for range 3 {
		_, err := d.ProcessDue(ctx)
		require.NoError(t, err)
	}
	for _, id := range ids {
		assert.Equal(t, StatusSuccess, findDelivery(t, d, wh.ID, id).Status, id)
	}
	assert.Len(t, rc.requests(), 6)
}
