package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	ks "github.com/smartdrop/webhooks/internal/keyspace"
)

// Queue members that name their events (ks.Member): a new keyspace's, so that the lease script reads
// the bodies it leases; a keyspace stored before keeps plain delivery ids, and delivers as it did.

// newLayoutDispatcher is newClockedDispatcher on a keyspace stored as stored ("" for a new one), read
// as New's first call that needs it would.
func newLayoutDispatcher(t *testing.T, tr *testRedis, stored string, opts Options) (*Dispatcher, *testClock) {
	t.Helper()
	if stored != "" {
		require.NoError(t, tr.rdb.Set(context.Background(), newKeyspace(tr.prefix).shardsKey(), stored, 0).Err())
	}
	return newClockedDispatcher(t, tr, opts)
}

// layouts are the two forms of queue member a keyspace can have: a new one's name their events; one
// stored as a bare count (before that form) keeps plain delivery ids.
var layouts = []struct {
	name, stored string
	named        bool
}{
	{"new keyspace", "", true},
	{"plain members, stored before", "64", false},
}

// eventGets counts the GETs of event keys (their bodies) a client sends, pipelined or not.
type eventGets struct {
	passHook
	n atomic.Int64
}

func (g *eventGets) count(cmds ...redis.Cmder) {
	for _, c := range cmds {
		args := c.Args()
		if name, _ := args[0].(string); strings.EqualFold(name, "get") && len(args) > 1 {
			if key, _ := args[1].(string); strings.Contains(key, ":evt:") {
				g.n.Add(1)
			}
		}
	}
}

func (g *eventGets) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { g.count(cmd); return next(ctx, cmd) }
}

func (g *eventGets) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { g.count(cmds...); return next(ctx, cmds) }
}

// TestKeyspaceLayoutsDeliver: in a new keyspace and in one stored before queue members named their
// events, a failed inline attempt's retry and an Enqueue'd delivery are queued under the layout's
// member, a worker's pass sends each once with its event's body, and both leave their queues.
func TestKeyspaceLayoutsDeliver(t *testing.T) {
	t.Parallel()
	for _, tc := range layouts {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			d, clock := newLayoutDispatcher(t, tr, tc.stored, Options{})
			require.Equal(t, tc.named, d.keys.BodyRefs)
			rc := newReceiver(t)
			wh := mustCreate(t, d, rc, "*")
			rc.status.Store(500)
			res, err := d.Dispatch(ctx, Event{Type: "e", ID: "inline", Data: json.RawMessage(`{"n":1}`)})
			require.NoError(t, err)
			require.Equal(t, StatusPending, res[0].Delivery.Status, "the inline attempt failed: a retry")
			_, err = d.Enqueue(ctx, Event{Type: "e", ID: "queued", Data: json.RawMessage(`{"n":2}`)})
			require.NoError(t, err)
			for _, evt := range []string{"inline", "queued"} {
				id := d.keys.DeliveryID(wh.ID, evt)
				member, _, ok := queued(t, tr, d, d.keys.ShardOf(evt), wh.ID, id)
				require.True(t, ok, evt)
				want := id
				if tc.named {
					want = ks.Member(id, evt)
				}
				assert.Equal(t, want, member, "%s: the layout's member", evt)
			}

			rc.status.Store(0)
			clock.Advance(time.Hour)
			n, err := d.ProcessDue(ctx)
			require.NoError(t, err)
			assert.Equal(t, 2, n)
			bodies := map[string]int{}
			for _, r := range rc.requests()[1:] {
				var p struct {
					Data struct{ N int } `json:"data"`
				}
				require.NoError(t, json.Unmarshal(r.Body, &p))
				bodies[r.Header.Get("webhook-id")] = p.Data.N
			}
			for n, evt := range []string{"inline", "queued"} {
				id := d.keys.DeliveryID(wh.ID, evt)
				dl, err := d.Deliveries().Get(ctx, id)
				require.NoError(t, err)
				assert.Equal(t, StatusSuccess, dl.Status, evt)
				assert.Equal(t, n+1, bodies[id], "%s: its own event's body", evt)
				_, _, ok := queued(t, tr, d, d.keys.ShardOf(evt), wh.ID, id)
				assert.False(t, ok, "%s: delivered, out of its queue", evt)
			}
			assert.Len(t, rc.requests(), 3, "the failed attempt, then each delivery once")
		})
	}
}

// TestLeaseReadsTheBodies: a worker that did not claim the events (another replica, or after its
// memory of them expired) gets their bodies from the lease script, with no GET of its own; in a
// keyspace of plain members it reads them in a round trip of its own, as before.
func TestLeaseReadsTheBodies(t *testing.T) {
	t.Parallel()
	for _, tc := range layouts {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			producer, _ := newLayoutDispatcher(t, tr, tc.stored, Options{})
			rc := newReceiver(t)
			mustCreate(t, producer, rc, "*")
			mustCreate(t, producer, rc, "*")
			const events = 6
			for i := range events {
				_, err := producer.Enqueue(ctx, Event{Type: "e", ID: "e" + string(rune('a'+i)), Data: json.RawMessage(`{"i":"` + string(rune('a'+i)) + `"}`)})
				require.NoError(t, err)
			}
			c := tr.newClient(t)
			gets := &eventGets{}
			c.AddHook(gets)
			worker := newTestDispatcherOn(t, c, tr, Options{})
			n, err := worker.ProcessDue(ctx)
			require.NoError(t, err)
			require.Equal(t, 2*events, n)
			var mu sync.Mutex
			seen := map[string]bool{}
			for _, r := range rc.requests() {
				var p struct {
					ID   string             `json:"id"`
					Data struct{ I string } `json:"data"`
				}
				require.NoError(t, json.Unmarshal(r.Body, &p))
				assert.Equal(t, "e"+p.Data.I, p.ID, "each request carries its own event's body")
				mu.Lock()
				seen[r.Header.Get("webhook-id")] = true
				mu.Unlock()
			}
			assert.Len(t, seen, 2*events, "every delivery sent")
			if !tc.named {
				assert.Positive(t, gets.n.Load(), "plain members: the worker reads the bodies itself")
			} else {
				assert.Zero(t, gets.n.Load(), "the lease script read the bodies")
			}
		})
	}
}

// TestSweptInlineAttemptLeavesOneQueueEntry: an inline attempt whose inline entry a worker's sweep took
// into its queue while the attempt ran (as if its lease had ended) is there under the member its claim
// would have queued it under (the inline entry names the event); its outcome, a retry, then leaves one
// queue entry, due at the retry, whose lease reads the body.
func TestSweptInlineAttemptLeavesOneQueueEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{Timeout: 5 * time.Second})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	arrived, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free) // a failed assertion must not leave the request held
	var first atomic.Bool
	rc.setHook(func(*http.Request) {
		if first.CompareAndSwap(false, true) {
			close(arrived)
			<-release
		}
	})
	const evt = "swept"
	done := make(chan []Result, 1)
	go func() {
		res, _ := d.Dispatch(ctx, Event{Type: "e", ID: evt})
		done <- res
	}()
	<-arrived
	later := time.Now().Add(time.Hour) // past the inline attempt's lease
	_, strays, _, _, err := d.scanReady(ctx, later, 16, scanFull)
	require.NoError(t, err)
	require.Len(t, strays, 1, "the sweep finds the inline entry")
	took, err := d.adopt(ctx, later, strays)
	require.NoError(t, err)
	require.Equal(t, 1, took, "and takes it into its queue")
	id, shard := d.keys.DeliveryID(wh.ID, evt), d.keys.ShardOf(evt)
	member, _, ok := queued(t, tr, d, shard, wh.ID, id)
	require.True(t, ok)
	require.Equal(t, ks.Member(id, evt), member, "under the member that names its event")

	rc.status.Store(500)
	free()
	res := <-done
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	require.Equal(t, StatusPending, res[0].Delivery.Status, "a retry")
	entries, err := tr.rdb.ZRangeWithScores(ctx, d.keys.queueKey(shard, wh.ID), 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, entries, 1, "one queue entry for the delivery")
	assert.Equal(t, ks.Member(id, evt), entries[0].Member)
	assert.Equal(t, float64(res[0].Delivery.NextAttemptAt.UnixMilli()), entries[0].Score, "due at the retry")
}
