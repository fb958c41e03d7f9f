package webhooks

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// claimScriptsRun names the claim scripts (claim, find_duplicates) that log saw run since it was last
// asked, and forgets every call.
func claimScriptsRun(log *scriptKeys) []string {
	log.mu.Lock()
	defer log.mu.Unlock()
	var names []string
	for name, s := range map[string]*redis.Script{"claim": rdb.Claim, "find_duplicates": rdb.FindDuplicates} {
		if len(log.calls[s.Hash()]) > 0 {
			names = append(names, name)
		}
	}
	clear(log.calls)
	return names
}

// newDuplicateScene is a Dispatcher whose client logs its scripts (claimScriptsRun), two webhooks
// of one receiver subscribed to evt's type, and evt.
func newDuplicateScene(t *testing.T) (tr *testRedis, d *Dispatcher, log *scriptKeys, rc *receiver, evt Event) {
	tr = newTestRedis(t)
	client := tr.newClient(t)
	log = &scriptKeys{calls: map[string][][]string{}}
	client.AddHook(log)
	d = newTestDispatcherOn(t, client, tr, Options{})
	rc = newReceiver(t)
	mustCreate(t, d, rc, "dup.*")
	mustCreate(t, d, rc, "dup.*")
	return tr, d, log, rc, Event{Type: "dup.made", ID: "e1", Data: map[string]any{"n": 1}}
}

// TestDuplicatesOfAKnownEventAreAnsweredAsByTheClaim: a Dispatcher that claimed an event answers a
// call for it again with one script that carries none of the claim's records (rdb.FindDuplicates),
// and with what the claim would answer: every target's pair as it stands, marked Duplicate, nothing
// sent. Whatever else has happened since — a webhook subscribed, a record gone, the id dispatched
// with other data or an order key — the claim decides, as it does for a Dispatcher that never saw
// the event.
func TestDuplicatesOfAKnownEventAreAnsweredAsByTheClaim(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		change  func(t *testing.T, d *Dispatcher, tr *testRedis, rc *receiver, evt *Event)
		scripts []string // what the second call runs
		check   func(t *testing.T, res []Result, err error, rc *receiver)
	}{
		{name: "duplicate", scripts: []string{"find_duplicates"},
			check: func(t *testing.T, res []Result, err error, rc *receiver) {
				require.NoError(t, err)
				require.Len(t, res, 2)
				for _, r := range res {
					assert.True(t, r.Duplicate, "webhook %s", r.WebhookID)
					require.NotNil(t, r.Delivery)
					assert.Equal(t, StatusSuccess, r.Delivery.Status, "the pair as it stands")
					assert.Equal(t, 1, r.Delivery.Attempts)
				}
				assert.Equal(t, 2, rc.count(), "nothing sent again")
			}},
		{name: "a webhook subscribed since", scripts: []string{"find_duplicates", "claim"},
			change: func(t *testing.T, d *Dispatcher, _ *testRedis, rc *receiver, _ *Event) { mustCreate(t, d, rc, "dup.*") },
			check: func(t *testing.T, res []Result, err error, rc *receiver) {
				require.NoError(t, err)
				require.Len(t, res, 3)
				var dups int
				for _, r := range res {
					if r.Duplicate {
						dups++
					} else {
						assert.Equal(t, StatusSuccess, r.Delivery.Status, "the new webhook's pair sent")
					}
				}
				assert.Equal(t, 2, dups)
				assert.Equal(t, 3, rc.count(), "the new webhook's request, and no other")
			}},
		{name: "a record gone", scripts: []string{"find_duplicates", "claim"},
			change: func(t *testing.T, d *Dispatcher, tr *testRedis, _ *receiver, evt *Event) {
				list, err := d.Webhooks().List(context.Background())
				require.NoError(t, err)
				scoped := rdb.ScopedEventID(evt.Tenant, evt.ID)
				id := d.keys.DeliveryID(list[0].ID, scoped)
				require.NoError(t, tr.rdb.Del(context.Background(), d.keys.Delivery(d.keys.EventShard(evt.Tenant, scoped, ""), id)).Err())
			},
			check: func(t *testing.T, res []Result, err error, rc *receiver) {
				require.NoError(t, err)
				require.Len(t, res, 2)
				assert.NotEqual(t, res[0].Duplicate, res[1].Duplicate, "the pair whose record is gone is claimed again")
				assert.Equal(t, 3, rc.count())
			}},
		{name: "other data under the id", scripts: []string{"find_duplicates", "claim"},
			change: func(_ *testing.T, _ *Dispatcher, _ *testRedis, _ *receiver, evt *Event) {
				evt.Data = map[string]any{"n": 2}
			},
			check: func(t *testing.T, _ []Result, err error, rc *receiver) {
				assert.ErrorIs(t, err, ErrEventConflict)
				assert.Equal(t, 2, rc.count())
			}},
		{name: "an order key", scripts: []string{}, // refused by the ordered path before any claim
			change: func(_ *testing.T, _ *Dispatcher, _ *testRedis, _ *receiver, evt *Event) { evt.OrderKey = "k" },
			check: func(t *testing.T, _ []Result, err error, rc *receiver) {
				assert.ErrorIs(t, err, ErrOrderKeyConflict)
				assert.Equal(t, 2, rc.count())
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tr, d, log, rc, evt := newDuplicateScene(t)
			ctx := context.Background()
			res, err := d.Dispatch(ctx, evt)
			require.NoError(t, err)
			require.Len(t, res, 2)
			assert.Equal(t, []string{"claim"}, claimScriptsRun(log), "an event this Dispatcher never claimed is claimed at once")
			if c.change != nil {
				c.change(t, d, tr, rc, &evt)
			}
			res, err = d.Dispatch(ctx, evt)
			c.check(t, res, err, rc)
			assert.ElementsMatch(t, c.scripts, claimScriptsRun(log), "scripts of the second call")
		})
	}
}

// TestDuplicatesOfAnUnknownEventAreClaimed: a Dispatcher that did not claim an event (another
// replica's, or this process before a restart) answers a duplicate by the claim, and the same as the
// Dispatcher that claimed it, by Dispatch and by Enqueue, for an event of a tenant or of none.
func TestDuplicatesOfAnUnknownEventAreClaimed(t *testing.T) {
	t.Parallel()
	for _, enqueue := range []bool{false, true} {
		for _, tenant := range []string{"", "acme"} {
			t.Run(fmt.Sprintf("enqueue=%t/tenant=%q", enqueue, tenant), func(t *testing.T) {
				t.Parallel()
				tr, other, log, rc, evt := newDuplicateScene(t)
				ctx := context.Background()
				if tenant != "" {
					evt.Tenant = tenant
					for range 2 {
						_, err := other.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"dup.*"}, Tenant: tenant})
						require.NoError(t, err)
					}
				}
				first := newTestDispatcher(t, tr, Options{})
				call, otherCall := first.Dispatch, other.Dispatch
				if enqueue {
					call, otherCall = first.Enqueue, other.Enqueue
				}
				res, err := call(ctx, evt)
				require.NoError(t, err)
				require.NotEmpty(t, res)
				known, err := call(ctx, evt)
				require.NoError(t, err)
				unknown, err := otherCall(ctx, evt)
				require.NoError(t, err)
				assert.Equal(t, []string{"claim"}, claimScriptsRun(log))
				assert.Equal(t, known, unknown, "the same answer either way")
				for _, r := range known {
					assert.True(t, r.Duplicate, "webhook %s", r.WebhookID)
				}
				if !enqueue {
					assert.Equal(t, len(res), rc.count(), "each pair sent once")
				}
			})
		}
	}
}

// TestAnOrderedEventIsNotReadAsADuplicate: an event first dispatched with an order key is not
// remembered as a duplicate to read: the same id without one goes to the claim, which refuses it.
func TestAnOrderedEventIsNotReadAsADuplicate(t *testing.T) {
	t.Parallel()
	_, d, log, rc, evt := newDuplicateScene(t)
	ctx := context.Background()
	ordered := evt
	ordered.OrderKey = "k"
	_, err := d.Dispatch(ctx, ordered)
	require.NoError(t, err)
	claimScriptsRun(log)
	_, err = d.Dispatch(ctx, evt)
	assert.ErrorIs(t, err, ErrOrderKeyConflict)
	assert.Equal(t, []string{"claim"}, claimScriptsRun(log), "no read of duplicates first")
	assert.Equal(t, 2, rc.count())
}

// TestKnownEventsRememberTheNewest: the table remembers the events added last, two per pair of
// slots, and spreads them over all its slots: of the last 1,000 of 200,000 events added, all but a
// few; of a replay of a third as many events as slots, 93% or more (95% expected; one slot per event
// would keep 85%); and, after as many events as slots, 73% of the slots in use (each pair holding
// min(2, X) of X ~ Poisson(2) events, with hashes spread evenly; one slot per event would fill 63%).
func TestKnownEventsRememberTheNewest(t *testing.T) {
	t.Parallel()
	off := newKnownEvents(false)
	off.add("e")
	assert.False(t, off.has("e"), "a table that is off (ReplicaAcks) remembers nothing")
	k := newKnownEvents(true)
	assert.False(t, k.has("e"), "an empty table remembers nothing")
	const n, last = 200_000, 1000
	for i := range n {
		k.add("event-" + strconv.Itoa(i))
	}
	remembered := 0
	for i := n - last; i < n; i++ {
		if k.has("event-" + strconv.Itoa(i)) {
			remembered++
		}
	}
	assert.GreaterOrEqual(t, remembered, last*99/100, "the newest events are remembered")
	assert.False(t, k.has("never added"))

	k = newKnownEvents(true)
	const replay = knownEventSlots / 3
	for i := range replay {
		k.add("event-" + strconv.Itoa(i))
	}
	remembered = 0
	for i := range replay {
		if k.has("event-" + strconv.Itoa(i)) {
			remembered++
		}
	}
	assert.GreaterOrEqual(t, float64(remembered)/replay, 0.93, "a replay of a third of the slots' events is remembered")

	k = newKnownEvents(true)
	for i := range knownEventSlots {
		k.add("event-" + strconv.Itoa(i))
	}
	used := 0
	for i := range knownEventSlots {
		if k.table.Load()[i].Load() != 0 {
			used++
		}
	}
	assert.InDelta(t, 0.729, float64(used)/knownEventSlots, 0.02, "slots in use after as many events as slots")
}

// TestADuplicateTakesNoRateSlot: a duplicate, answered by the claim (a Dispatcher that never saw the
// event) or by a read, takes none of its webhook's RateLimit slots: a fresh event right after it is
// attempted inline, in the slot the duplicates left free.
func TestADuplicateTakesNoRateSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	other := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, RateLimit: 2}) // a slot every 500ms
	require.NoError(t, err)
	evt := Event{Type: "rated.made", ID: "e1"}
	res, err := d.Dispatch(ctx, evt)
	require.NoError(t, err)
	require.Equal(t, StatusSuccess, res[0].Delivery.Status)
	time.Sleep(600 * time.Millisecond) // the next slot is free
	for _, disp := range []*Dispatcher{other, other, d, d} {
		res, err = disp.Dispatch(ctx, evt)
		require.NoError(t, err)
		require.True(t, res[0].Duplicate)
	}
	res, err = d.Dispatch(ctx, Event{Type: "rated.made", ID: "e2"})
	require.NoError(t, err, "attempted inline, not left to the worker for want of a rate slot")
	assert.Equal(t, StatusSuccess, res[0].Delivery.Status)
	assert.Equal(t, 2, rc.count())
}
