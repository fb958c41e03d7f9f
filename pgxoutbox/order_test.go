package pgxoutbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/pgxoutbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startRelays starts n relays on table, each an Outbox of its own, on its own pool and Redis client
// (as replicas would be), none running a worker; the fixture's Dispatcher delivers.
func (f *fixture) startRelays(t testing.TB, n int, opts pgxoutbox.Options) {
	t.Helper()
	opts.Table = f.table
	if opts.PollInterval == 0 {
		opts.PollInterval = 50 * time.Millisecond
	}
	for i := range n {
		d := f.tr.newDispatcher(t, f.tr.client(t))
		o, err := pgxoutbox.New(newPool(t, pgURL(t), int32(opts.Concurrency)+2), d, opts)
		require.NoError(t, err)
		runInBackground(t, fmt.Sprintf("relay %d", i), o.Run)
	}
}

// TestOrderedKeysKeepTheirOrder: events of one order key, each committed in its own transaction, one
// after another, are delivered in commit order through the outbox with three relays (small batches,
// so a key's rows spread over several passes of several relays), some committed before the relays
// start and some while they run, mixed with unordered events. Broken by dropping the relay's key lock
// from the claim (the keys' events arrive out of order) or by enqueueing a key's rows of one pass at
// once (the same).
func TestOrderedKeysKeepTheirOrder(t *testing.T) {
	f := newFixture(t, pgxoutbox.Options{})
	const keys, perKey, producers = 24, 25, 4
	produce := func(from, to int) {
		var wg sync.WaitGroup
		for p := range producers {
			wg.Go(func() {
				for s := from; s < to; s++ {
					for k := p; k < keys; k += producers {
						key := fmt.Sprintf("key-%d", k)
						f.commit(t, webhooks.Event{Type: "order.updated", ID: fmt.Sprintf("%s-%d", key, s), OrderKey: key,
							Data: payload{Key: key, Seq: s}},
							webhooks.Event{Type: "order.viewed", ID: fmt.Sprintf("u-%s-%d", key, s)})
					}
				}
			})
		}
		wg.Wait()
	}
	produce(0, 10) // a backlog for the relays to share out
	f.startRelays(t, 3, pgxoutbox.Options{BatchSize: 7, Concurrency: 2, EnqueueConcurrency: 8})
	produce(10, perKey)

	want := make([]int, perKey)
	for i := range want {
		want[i] = i
	}
	for _, c := range []*counter{f.a, f.b} {
		eventually(t, 60*time.Second, func() bool { n, _ := c.distinct(); return n == 2*keys*perKey },
			"every event delivered")
		assert.Empty(t, c.repeated(), "each event once")
		order := c.keyOrder()
		require.Len(t, order, keys)
		for k, got := range order {
			assert.Equal(t, want, got, "key %s in commit order", k)
		}
	}
	f.drained(t, 10*time.Second)
}

// TestOrderedKeyFollowsCommitOrder: two transactions enqueue an event of one key; the one that
// enqueued second cannot commit first: its EnqueueTx waits for the first transaction's end (the
// key's lock), so the key's events are delivered in commit order even though they overlapped. Broken
// by dropping the lock from the ordered insert: the second transaction commits first, and its event
// (with the later id) is delivered second, against the commit order.
func TestOrderedKeyFollowsCommitOrder(t *testing.T) {
	f := newFixture(t, pgxoutbox.Options{})
	ctx := context.Background()
	tx1 := begin(t, ctx, f.pool)
	require.NoError(t, f.o.EnqueueTx(ctx, tx1, webhooks.Event{Type: "order.updated", ID: "first-in", OrderKey: "k",
		Data: payload{Key: "k", Seq: 1}}))
	tx2 := begin(t, ctx, f.pool)
	enqueued := make(chan error, 1)
	go func() {
		enqueued <- f.o.EnqueueTx(ctx, tx2, webhooks.Event{Type: "order.updated", ID: "second-in", OrderKey: "k",
			Data: payload{Key: "k", Seq: 2}})
	}()
	var commitOrder []int
	select {
	case err := <-enqueued: // not held back: commit the second first
		require.NoError(t, err)
		require.NoError(t, tx2.Commit(ctx))
		require.NoError(t, tx1.Commit(ctx))
		commitOrder = []int{2, 1}
	case <-time.After(300 * time.Millisecond): // held back by the key's lock until tx1 ends
		require.NoError(t, tx1.Commit(ctx))
		require.NoError(t, <-enqueued)
		require.NoError(t, tx2.Commit(ctx))
		commitOrder = []int{1, 2}
	}
	f.relay(t)
	f.delivered(t, 10*time.Second, "first-in", "second-in")
	assert.Equal(t, commitOrder, f.a.keyOrder()["k"], "delivered in commit order")
	assert.Equal(t, []int{1, 2}, commitOrder, "the second transaction waited for the first")

	// Another key, or another tenant's same key, does not wait.
	tx3 := begin(t, ctx, f.pool)
	require.NoError(t, f.o.EnqueueTx(ctx, tx3, webhooks.Event{Type: "order.updated", ID: "k-again", OrderKey: "k"}))
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	tx4 := begin(t, tctx, f.pool)
	require.NoError(t, f.o.EnqueueTx(tctx, tx4, webhooks.Event{Type: "order.updated", ID: "other-key", OrderKey: "k2"}))
	require.NoError(t, f.o.EnqueueTx(tctx, tx4, webhooks.Event{Type: "order.updated", ID: "other-tenant", OrderKey: "k", Tenant: "t2"}))
	require.NoError(t, f.o.EnqueueTx(tctx, tx4, webhooks.Event{Type: "order.updated", ID: "unordered"}))
}

// TestLateCommitBelowTheFloor: a transaction that enqueued an event before others and commits after
// they were relayed (its row's id is below where the passes now start reading) is relayed all the
// same, by the next full scan (within about a second). Broken by passes that never read from the
// start again (the late event is never delivered).
func TestLateCommitBelowTheFloor(t *testing.T) {
	f := newFixture(t, pgxoutbox.Options{})
	ctx := context.Background()
	late := begin(t, ctx, f.pool)
	require.NoError(t, f.o.EnqueueTx(ctx, late, webhooks.Event{Type: "order.paid", ID: "late"}))
	for i := range 5 {
		f.commit(t, webhooks.Event{Type: "order.paid", ID: fmt.Sprintf("early-%d", i)})
	}
	f.relay(t) // its first pass is a full scan: the floor is the first early row
	f.delivered(t, 10*time.Second, "early-0", "early-1", "early-2", "early-3", "early-4")
	require.NoError(t, late.Commit(ctx))
	f.delivered(t, 5*time.Second, "late")
	f.drained(t, 5*time.Second)
}
