package amqpdest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	webhooks "github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/amqpdest"
	"github.com/smartdrop/webhooks/verify"
)

// engine is Dispatchers sharing one miniredis, each with a destination of its own, as replicas of
// a service are.
type engine struct {
	t   *testing.T
	mr  *miniredis.Miniredis
	rdb *redis.Client
	ds  []*webhooks.Dispatcher
}

// newEngine returns n Dispatchers of o on one miniredis, Dispatcher i sending through dest(i).
func newEngine(t *testing.T, n int, o webhooks.Options, dest func(i int) webhooks.Destination) *engine {
	e := &engine{t: t, mr: miniredis.RunT(t)}
	e.rdb = redis.NewClient(&redis.Options{Addr: e.mr.Addr()})
	t.Cleanup(func() { _ = e.rdb.Close() })
	for i := range n {
		oi := o
		oi.Destinations = []webhooks.Destination{dest(i)}
		d, err := webhooks.New(e.rdb, oi)
		require.NoError(t, err)
		e.ds = append(e.ds, d)
	}
	return e
}

// run runs every Dispatcher's worker until the test ends.
func (e *engine) run() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, d := range e.ds {
		wg.Go(func() {
			if err := d.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				e.t.Errorf("Run: %v", err)
			}
		})
	}
	e.t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// pending is the number of deliveries not yet succeeded or failed for good.
func (e *engine) pending() int {
	st, err := e.ds[0].Stats(context.Background())
	require.NoError(e.t, err)
	return int(st.Due + st.Scheduled + st.Leased)
}

// waitDelivered waits until q holds at least n messages and no delivery is pending.
func (e *engine) waitDelivered(b *broker, q string, n int) {
	e.t.Helper()
	waitUntil(e.t, "every delivery made", func() (int, bool) {
		c := b.count(q)
		return c, c >= n && e.pending() == 0
	})
}

// waitUntil polls f until it is done. It fails the test when f's progress figure stays the same for
// a minute: the wait is bounded by progress, not by the time the whole takes.
func waitUntil(t *testing.T, what string, f func() (progress int, done bool)) {
	t.Helper()
	const stall = time.Minute
	last, since := -1, time.Now()
	for {
		p, done := f()
		if done {
			return
		}
		if p != last {
			last, since = p, time.Now()
		} else if time.Since(since) > stall {
			t.Fatalf("%s: no progress for %s (at %d)", what, stall, p)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eventBody is the Standard Webhooks body as a consumer reads it.
type eventBody struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data struct {
		N   int    `json:"n"`
		Key string `json:"key"`
	} `json:"data"`
}

func parseBody(t *testing.T, b []byte) eventBody {
	var e eventBody
	require.NoError(t, json.Unmarshal(b, &e), "%s", b)
	return e
}

// keyspace is every key and value of the miniredis, as text.
func keyspace(t *testing.T, rdb *redis.Client) map[string]string {
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	out := map[string]string{}
	for _, k := range keys {
		typ, err := rdb.Type(ctx, k).Result()
		require.NoError(t, err)
		var v any
		switch typ {
		case "string":
			v, err = rdb.Get(ctx, k).Result()
		case "hash":
			v, err = rdb.HGetAll(ctx, k).Result()
		case "list":
			v, err = rdb.LRange(ctx, k, 0, -1).Result()
		case "set":
			v, err = rdb.SMembers(ctx, k).Result()
		case "zset":
			v, err = rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
		case "stream":
			v, err = rdb.XRange(ctx, k, "-", "+").Result()
		default:
			t.Fatalf("key %s of type %s: not read", k, typ)
		}
		require.NoError(t, err)
		out[k] = fmt.Sprint(v)
	}
	return out
}

// TestDispatchedTwiceArrivesOnce: 1,000 events, each dispatched twice at once by two of 16
// goroutines through two of 3 Dispatchers (one miniredis), to one amqp webhook on a topic exchange
// → exactly 1,000 messages in the bound queue, each with its delivery's webhook-id as message_id and
// a signature the verify package accepts with the webhook's secret.
func TestDispatchedTwiceArrivesOnce(t *testing.T) {
	t.Parallel()
	const events, goroutines = 1000, 16
	b := newBroker(t)
	x, q := b.topic("orders", "order.*")
	e := newEngine(t, 3, webhooks.Options{AllowPrivateNetworks: true}, func(int) webhooks.Destination {
		return newDestination(t, amqpdest.Options{})
	})
	e.run() // the worker makes the attempts Dispatch defers
	ctx := context.Background()
	w, err := e.ds[0].Webhooks().Create(ctx, webhooks.Webhook{URL: b.target(url.Values{"exchange": {x}}).String(), Events: []string{"order.*"}})
	require.NoError(t, err)

	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for j := range events / (goroutines / 2) {
				i := g%8 + 8*j
				if g >= 8 { // the second dispatch of each event, from the other end
					i = g%8 + 8*(events/8-1-j)
				}
				res, err := e.ds[(g+i)%3].Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: fmt.Sprintf("evt_%04d", i), Data: map[string]int{"n": i}})
				if !assert.NoError(t, err) || !assert.Len(t, res, 1) {
					return
				}
				mu.Lock()
				if !res[0].Duplicate {
					claimed[res[0].Delivery.EventID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, claimed, events, "every event is claimed")

	e.waitDelivered(b, q, events)
	require.Equal(t, events, b.count(q), "exactly one message per event at the broker")

	v, err := verify.New(w.Secret)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, m := range b.drain(q) {
		require.False(t, seen[m.MessageId], "message %s twice", m.MessageId)
		seen[m.MessageId] = true
		h := header(m)
		require.NoError(t, v.Verify(h, m.Body), "message %s verifies", m.MessageId)
		assert.Equal(t, m.MessageId, h.Get("webhook-id"))
		dl, err := e.ds[1].Deliveries().Get(ctx, m.MessageId)
		require.NoError(t, err, "the message_id is a delivery's id")
		body := parseBody(t, m.Body)
		assert.Equal(t, dl.EventID, body.ID)
		assert.Equal(t, fmt.Sprintf("evt_%04d", body.Data.N), body.ID)
		assert.Equal(t, []any{"order.paid", "application/json", uint8(2)}, []any{m.Type, m.ContentType, m.DeliveryMode})
	}
	assert.Len(t, seen, events)
}

// TestBrokerURLGuardedAndSealed: a tenant's broker URL on a private address is refused at Create by
// default; with private networks allowed, the URL's password is sealed in Redis (SecretKeys: no key
// or value holds it), shown as xxxxx by the admin API, never in an attempt's words, and reaches the
// broker, which refuses it here (a password the machine's RabbitMQ does not know).
func TestBrokerURLGuardedAndSealed(t *testing.T) {
	t.Parallel()
	const password = "Tenant-pa55-Q8z"
	ctx := context.Background()
	guarded := newEngine(t, 1, webhooks.Options{}, func(int) webhooks.Destination { return newDestination(t, amqpdest.Options{}) })
	_, err := guarded.ds[0].Webhooks().Create(ctx, webhooks.Webhook{URL: "amqp://tenant:" + password + "@10.0.0.1:5672/?exchange=orders", Events: []string{"*"}})
	require.ErrorIs(t, err, webhooks.ErrBlockedAddress, "a broker on a private address is refused at Create")

	b := newBroker(t)
	key := []byte(strings.Repeat("k", 32))
	e := newEngine(t, 1, webhooks.Options{AllowPrivateNetworks: true, SecretKeys: [][]byte{key}}, func(int) webhooks.Destination {
		return newDestination(t, amqpdest.Options{})
	})
	d := e.ds[0]
	u := b.target(url.Values{"exchange": {b.exchange("sealed", "topic")}})
	u.User = url.UserPassword("tenant", password)
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: u.String(), Tenant: "acme", Events: []string{"*"}})
	require.NoError(t, err)
	res, err := d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "evt_1", Tenant: "acme", Data: map[string]int{"n": 1}})
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Contains(t, res[0].Delivery.LastError, `closed the connection at login: check the user name ("tenant")`, "the password reached the broker, which refused it")

	for k, v := range keyspace(t, e.rdb) {
		assert.NotContains(t, k+" "+v, password, "key %s holds the password", k)
	}
	for _, path := range []string{"/webhooks", "/webhooks/" + w.ID, "/deliveries/" + res[0].Delivery.ID, "/deliveries/" + res[0].Delivery.ID + "/request"} {
		rec := httptest.NewRecorder()
		d.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, http.StatusOK, rec.Code, "%s: %s", path, rec.Body)
		assert.NotContains(t, rec.Body.String(), password, path)
	}
	rec := httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/webhooks/"+w.ID, nil))
	assert.Contains(t, rec.Body.String(), "amqp://tenant:xxxxx@127.0.0.1:5672/", "the API shows the URL without its password")
}
