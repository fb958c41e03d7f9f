package webhooks

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claimGate holds the first claim script call that passes through it until released.
type claimGate struct {
	passHook
	entered chan struct{}
	release chan struct{}
	once    atomic.Bool
}

func newClaimGate() *claimGate {
	return &claimGate{entered: make(chan struct{}), release: make(chan struct{})}
}

func isClaim(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	name := strings.ToLower(fmt.Sprint(args[0]))
	return (name == "evalsha" && args[1] == rdb.Claim.Hash()) || (name == "eval" && redis.NewScript(fmt.Sprint(args[1])).Hash() == rdb.Claim.Hash())
}

func (g *claimGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isClaim(cmd) && g.once.CompareAndSwap(false, true) {
			close(g.entered)
			<-g.release
		}
		return next(ctx, cmd)
	}
}

// TestClaimInterleaving delays the first caller's claim until a second caller has dispatched the same
// event all the way through: the first must come back with the second's records, and send nothing.
func TestClaimInterleaving(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	slowClient := tr.newClient(t)
	gate := newClaimGate()
	slowClient.AddHook(gate)
	slow := newTestDispatcherOn(t, slowClient, tr, Options{})
	fast := newTestDispatcherOn(t, tr.newClient(t), tr, Options{})
	rc := newReceiver(t)
	w1 := mustCreate(t, fast, rc, "pool.created")
	w2 := mustCreate(t, fast, rc, "pool.*")
	evt := Event{Type: "pool.created", ID: "interleaved"}

	slowDone := make(chan []Result, 1)
	go func() {
		res, err := slow.Dispatch(ctx, evt)
		assert.NoError(t, err)
		slowDone <- res
	}()
	select {
	case <-gate.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the slow caller never reached its claim")
	}
	fastRes, err := fast.Dispatch(ctx, evt)
	require.NoError(t, err)
	close(gate.release)
	var slowRes []Result
	select {
	case slowRes = <-slowDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow caller never finished")
	}

	require.Len(t, fastRes, 2)
	require.Len(t, slowRes, 2)
	for i := range fastRes {
		require.NoError(t, fastRes[i].Err)
		require.NoError(t, slowRes[i].Err)
		assert.False(t, fastRes[i].Duplicate, "the overtaking caller created the delivery")
		assert.True(t, slowRes[i].Duplicate, "the delayed caller got the existing delivery")
		assert.Equal(t, fastRes[i].Delivery.ID, slowRes[i].Delivery.ID)
	}
	assert.Equal(t, 2, rc.count(), "one request per webhook")
	for _, w := range []*Webhook{w1, w2} {
		list, err := fast.Deliveries().List(ctx, w.ID, 10)
		require.NoError(t, err)
		assert.Len(t, list, 1)
	}
}

// TestConcurrentDispatchStress: 20 events × 3 webhooks, each event dispatched by 16 concurrent callers
// spread over 4 Dispatchers with their own clients → exactly one request and one fresh result per pair;
// then dispatched as often again, the duplicates read concurrently in every replica → nothing sent.
func TestConcurrentDispatchStress(t *testing.T) {
	t.Parallel()
	const events, callers, replicas = 20, 16, 4
	ctx := context.Background()
	tr := newTestRedis(t)
	var ds []*Dispatcher
	for range replicas {
		// Every caller's fresh pair is attempted inline: a webhook has 20 fresh pairs over 4 replicas,
		// within the default in-flight floor (Concurrency/4 = 16 per replica), and a call at the limit
		// would wait for a slot of this fast receiver (the limit has its own tests); and a long Timeout,
		// so a long lease: under the race detector on a loaded machine, a claim's reply can come more
		// than the default test lease's margin (1s) late, and its attempt is then rightly deferred to a
		// worker, which this test does not run.
		ds = append(ds, newTestDispatcherOn(t, tr.newClient(t), tr, Options{Timeout: 10 * time.Second}))
	}
	rc := newReceiver(t)
	var hooks []*Webhook
	for _, p := range []string{"stress.*", "stress.run", "*"} {
		hooks = append(hooks, mustCreate(t, ds[0], rc, p))
	}

	var mu sync.Mutex
	fresh := map[string]int{} // (webhook, event) -> fresh results
	var wg sync.WaitGroup
	for e := range events {
		for c := range callers {
			wg.Go(func() {
				evt := Event{Type: "stress.run", ID: fmt.Sprintf("stress-%d", e), Data: e}
				res, err := ds[c%replicas].Dispatch(ctx, evt)
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, r := range res {
					assert.NoError(t, r.Err)
					if !r.Duplicate {
						fresh[r.WebhookID+"|"+evt.ID]++
					}
				}
			})
		}
	}
	wg.Wait()
	assert.Len(t, fresh, events*len(hooks))
	for pair, n := range fresh {
		assert.Equal(t, 1, n, "fresh results for %s", pair)
	}
	per := rc.perDelivery()
	assert.Len(t, per, events*len(hooks), "one delivery per pair")
	for id, n := range per {
		assert.Equal(t, 1, n, "requests for delivery %s", id)
	}
	assert.Equal(t, events*len(hooks), rc.count())

	// Every event again, from as many callers: each replica has claimed it (or got its duplicates from
	// the claim), so it reads them (find_duplicates), concurrently in every replica. Every pair comes
	// back a duplicate as it stands, and the receiver gets nothing more.
	for e := range events {
		for c := range callers {
			wg.Go(func() {
				res, err := ds[c%replicas].Dispatch(ctx, Event{Type: "stress.run", ID: fmt.Sprintf("stress-%d", e), Data: e})
				if assert.NoError(t, err) && assert.Len(t, res, len(hooks)) {
					for _, r := range res {
						assert.True(t, r.Duplicate, "stress-%d to %s", e, r.WebhookID)
						if assert.NotNil(t, r.Delivery) {
							assert.Equal(t, StatusSuccess, r.Delivery.Status)
						}
					}
				}
			})
		}
	}
	wg.Wait()
	assert.Equal(t, events*len(hooks), rc.count(), "no request sent again")
}
