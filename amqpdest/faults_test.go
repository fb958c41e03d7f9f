package amqpdest_test

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	webhooks "github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/amqpdest"
	"github.com/smartdrop/webhooks/destination/destinationtest"
	"github.com/smartdrop/webhooks/internal/testproxy"
)

// proxied returns a proxy to the machine's broker, closed when the test ends, and the broker's URL
// through it with query q.
func (b *broker) proxied(q url.Values) (*testproxy.Proxy, *url.URL) {
	p, err := testproxy.Start(b.url.Host)
	require.NoError(b.t, err)
	b.t.Cleanup(func() { _ = p.Close() })
	u := b.target(q)
	u.Host = p.Addr()
	return p, u
}

// shortRetries retry every 200ms, 100 times: what a broker outage of a few seconds needs.
func shortRetries() []time.Duration {
	s := make([]time.Duration, 100)
	for i := range s {
		s[i] = 200 * time.Millisecond
	}
	return s
}

// faultOptions are the Dispatchers' options of the fault tests: short retries, no circuit breaker
// (it is TestUnroutableOpensCircuit's), loopback allowed.
func faultOptions() webhooks.Options {
	return webhooks.Options{AllowPrivateNetworks: true, BreakAfter: -1, RetrySchedule: shortRetries(), Timeout: 5 * time.Second}
}

// faultWords are the words an attempt may fail with while the proxy is down or cuts replies: the
// broker unreachable, the connection closed during the handshake, lost before a confirm or while a
// channel was opened.
var faultWords = regexp.MustCompile(`^(could not connect to the broker at 127\.0\.0\.1:\d+: .+` +
	`|the connection to the broker at 127\.0\.0\.1:\d+ was (closed during the AMQP handshake|lost before it confirmed the message|lost while a channel was opened)` +
	`|the broker at 127\.0\.0\.1:\d+ closed the connection at login: check the user name \("guest"\) and password of the URL)$`)

// lostConfirm matches the failures after which the broker may hold the message all the same.
var lostConfirm = regexp.MustCompile(`lost before it confirmed|did not confirm|did not take the message`)

// observed is a destination whose Sends' failures are logged, and whose every nth Send (counted
// across the destinations sharing the counter) has the proxy cut the next reply, when every is set:
// a publish failed by the network, its confirm (or whatever the broker answers next) lost with its
// connection.
type observed struct {
	webhooks.Destination
	log *attemptLog

	p     *testproxy.Proxy
	every int64
}

// attemptLog counts the Sends of observed destinations and keeps their failures.
type attemptLog struct {
	sends, cuts atomic.Int64
	mu          sync.Mutex
	failures    []string
}

func (o *observed) Send(ctx context.Context, m *webhooks.Message) error {
	if n := o.log.sends.Add(1); o.every > 0 && n%o.every == 0 {
		o.log.cuts.Add(1)
		o.p.CutNextReply()
	}
	err := o.Destination.Send(ctx, m)
	if err != nil {
		o.log.mu.Lock()
		o.log.failures = append(o.log.failures, err.Error())
		o.log.mu.Unlock()
	}
	return err
}

// check asserts that every failure is in words, and returns how many may have left the message at
// the broker (a lost confirm).
func (l *attemptLog) check(t *testing.T) (failures, lost int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	for _, f := range l.failures {
		if !seen[f] {
			seen[f] = true
			t.Logf("failure: %s", f)
		}
		assert.Regexp(t, faultWords, f, "an attempt's failure in words")
		if lostConfirm.MatchString(f) {
			lost++
		}
	}
	return len(l.failures), lost
}

// TestBrokerUnreachable: the broker unreachable for 5 s (the proxy down) while events are dispatched
// → their attempts fail in words, the retries deliver every event once the proxy is up, and a
// message is repeated (with its message_id) only after a confirm the outage lost.
func TestBrokerUnreachable(t *testing.T) {
	t.Parallel()
	const before, during = 10, 100
	b := newBroker(t)
	x, q := b.topic("orders", "order.*")
	p, u := b.proxied(url.Values{"exchange": {x}})
	var log attemptLog
	e := newEngine(t, 3, faultOptions(), func(int) webhooks.Destination {
		return &observed{Destination: newDestination(t, amqpdest.Options{}), log: &log}
	})
	e.run()
	ctx := context.Background()
	_, err := e.ds[0].Webhooks().Create(ctx, webhooks.Webhook{URL: u.String(), Events: []string{"order.*"}})
	require.NoError(t, err)
	dispatch := func(i int) *webhooks.Delivery {
		res, err := e.ds[i%3].Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: fmt.Sprintf("evt_%03d", i), Data: map[string]int{"n": i}})
		require.NoError(t, err)
		require.Len(t, res, 1)
		return res[0].Delivery
	}
	for i := range before {
		assert.Equal(t, webhooks.StatusSuccess, dispatch(i).Status)
	}

	p.DownFor(5 * time.Second)
	var wg sync.WaitGroup
	var failedInline atomic.Int32
	for g := range 4 { // events flow through the outage and past it
		wg.Go(func() {
			for j := range during / 4 {
				if dispatch(before+g+4*j).Status != webhooks.StatusSuccess {
					failedInline.Add(1)
				}
				time.Sleep(250 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	require.Positive(t, failedInline.Load(), "attempts failed while the broker was unreachable")

	e.waitDelivered(b, q, before+during)
	msgs := b.drain(q)
	ids := map[string]int{}
	for _, m := range msgs {
		ids[m.MessageId]++
		assert.Equal(t, m.MessageId, header(m).Get("webhook-id"))
	}
	require.Len(t, ids, before+during, "every event reached the broker")
	for id := range ids {
		dl, err := e.ds[1].Deliveries().Get(ctx, id)
		require.NoError(t, err, "the message_id is a delivery's id")
		assert.Equal(t, webhooks.StatusSuccess, dl.Status)
	}
	failures, lost := log.check(t)
	assert.LessOrEqual(t, len(msgs)-len(ids), lost, "a message repeats only after a lost confirm")
	t.Logf("%d messages, %d events, %d failed attempts (%d lost confirms)", len(msgs), len(ids), failures, lost)
}

// TestLostConfirm: the proxy drops the connection after the publish reached the broker, before its
// confirm came back → Send fails in words, the broker has the message, and the engine's retry
// publishes it again with the same message_id: at most one repeat, which a consumer drops by
// message_id (RabbitMQ does not deduplicate).
func TestLostConfirm(t *testing.T) {
	t.Parallel()
	b := newBroker(t)

	t.Run("Send", func(t *testing.T) {
		q := b.queue("lost")
		p, u := b.proxied(url.Values{"routing_key": {q}})
		d := newDestination(t, amqpdest.Options{Heartbeat: 10 * time.Minute}) // no heartbeat to cut instead
		send := func(m string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return d.Send(ctx, destinationtest.Message(u, m, []byte(`{"m":"`+m+`"}`)))
		}
		require.NoError(t, send("msg_warm"), "the connection and a channel are up")
		require.Len(t, b.drain(q), 1)

		p.CutNextReply()
		err := send("msg_lost")
		require.Error(t, err, "no confirm, no success")
		assert.Contains(t, err.Error(), "the connection to the broker at "+p.Addr()+" was lost before it confirmed the message")
		require.Equal(t, 1, b.count(q), "the broker took the message")

		require.NoError(t, send("msg_lost"), "the retry is confirmed on a new connection")
		got := b.drain(q)
		require.Len(t, got, 2, "one repeat")
		for _, m := range got {
			assert.Equal(t, "msg_lost", m.MessageId, "the repeat has the same message_id")
		}
		assert.Equal(t, int64(2), p.Accepted(), "the retry connected again")
	})

	t.Run("Dispatch", func(t *testing.T) {
		q := b.queue("lost")
		p, u := b.proxied(url.Values{"routing_key": {q}})
		e := newEngine(t, 1, faultOptions(),
			func(int) webhooks.Destination {
				return newDestination(t, amqpdest.Options{Heartbeat: 10 * time.Minute})
			})
		d := e.ds[0]
		ctx := context.Background()
		_, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: u.String(), Events: []string{"*"}})
		require.NoError(t, err)
		res, err := d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "evt_warm"})
		require.NoError(t, err)
		require.Equal(t, webhooks.StatusSuccess, res[0].Delivery.Status)
		b.drain(q)

		p.CutNextReply()
		res, err = d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "evt_lost"})
		require.NoError(t, err)
		dl := res[0].Delivery
		require.Equal(t, webhooks.StatusPending, dl.Status)
		assert.Contains(t, dl.LastError, "was lost before it confirmed the message")
		e.run()
		waitUntil(t, "the retry", func() (int, bool) { return 0, e.pending() == 0 })
		got, err := d.Deliveries().Get(ctx, dl.ID)
		require.NoError(t, err)
		assert.Equal(t, webhooks.StatusSuccess, got.Status)
		msgs := b.drain(q)
		require.NotEmpty(t, msgs)
		assert.LessOrEqual(t, len(msgs), 2, "at most one repeat")
		for _, m := range msgs {
			assert.Equal(t, dl.ID, m.MessageId, "each copy has the delivery's webhook-id as message_id")
		}
		t.Logf("%d copies of the message whose confirm was lost", len(msgs))
	})
}

// TestOrderKeyThroughFailures: 5 keys × 50 ordered events, with every tenth publish failed by the
// proxy (its connection cut at the next reply) → each key's messages arrive in order; a repeat of a
// message (after a lost confirm) comes right after it, before the key's next one.
func TestOrderKeyThroughFailures(t *testing.T) {
	t.Parallel()
	const keys, each = 5, 50
	b := newBroker(t)
	x, q := b.topic("ordered", "#")
	p, u := b.proxied(url.Values{"exchange": {x}})
	var log attemptLog
	e := newEngine(t, 3, faultOptions(), func(int) webhooks.Destination {
		return &observed{Destination: newDestination(t, amqpdest.Options{}), log: &log, p: p, every: 10}
	})
	ctx := context.Background()
	_, err := e.ds[0].Webhooks().Create(ctx, webhooks.Webhook{URL: u.String(), Events: []string{"*"}})
	require.NoError(t, err)
	e.run()
	for n := range each {
		for k := range keys {
			_, err := e.ds[(n+k)%3].Enqueue(ctx, webhooks.Event{Type: "order.step", ID: fmt.Sprintf("k%d-%02d", k, n), OrderKey: fmt.Sprintf("key-%d", k),
				Data: map[string]any{"key": fmt.Sprintf("key-%d", k), "n": n}})
			require.NoError(t, err)
		}
	}
	e.waitDelivered(b, q, keys*each)
	require.GreaterOrEqual(t, log.cuts.Load(), int64(keys*each/10), "a tenth of the publishes were failed")

	msgs := b.drain(q)
	perKey := map[string][]int{}
	firstOf := map[string]int{} // message_id -> its index in its key's sequence
	events := 0
	for _, m := range msgs {
		body := parseBody(t, m.Body)
		seq := perKey[body.Data.Key]
		if at, ok := firstOf[m.MessageId]; ok {
			assert.Equal(t, len(seq)-1, at, "key %s: message %d repeated after a later one", body.Data.Key, body.Data.N)
			continue
		}
		firstOf[m.MessageId] = len(seq)
		perKey[body.Data.Key] = append(seq, body.Data.N)
		events++
	}
	want := make([]int, each)
	for i := range want {
		want[i] = i
	}
	require.Len(t, perKey, keys)
	for k, seq := range perKey {
		assert.Equal(t, want, seq, "key %s arrives in order", k)
	}
	failures, lost := log.check(t)
	require.Positive(t, failures, "attempts failed")
	assert.LessOrEqual(t, len(msgs)-events, lost, "a message repeats only after a lost confirm")
	t.Logf("%d sends, %d cut, %d failed attempts (%d lost confirms), %d messages for %d events",
		log.sends.Load(), log.cuts.Load(), failures, lost, len(msgs), events)
}

// TestUnroutableOpensCircuit: a webhook whose exchange routes its messages to no queue → each
// attempt fails, in words naming the exchange and the routing key, and the circuit breaker counts
// them: it opens after BreakAfter, and the next event is parked, not attempted.
func TestUnroutableOpensCircuit(t *testing.T) {
	t.Parallel()
	const breakAfter = 3
	b := newBroker(t)
	x := b.exchange("unbound", "topic")
	e := newEngine(t, 1, webhooks.Options{AllowPrivateNetworks: true, BreakAfter: breakAfter, RetrySchedule: []time.Duration{time.Hour}},
		func(int) webhooks.Destination { return newDestination(t, amqpdest.Options{}) })
	d := e.ds[0]
	ctx := context.Background()
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: b.target(url.Values{"exchange": {x}}).String(), Events: []string{"*"}})
	require.NoError(t, err)
	for i := range breakAfter {
		h, err := d.Webhooks().Health(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, webhooks.CircuitClosed, h.State, "before failure %d", i+1)
		res, err := d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: fmt.Sprintf("evt_%d", i)})
		require.NoError(t, err)
		dl := res[0].Delivery
		assert.Equal(t, webhooks.StatusPending, dl.Status)
		assert.Equal(t, 1, dl.Attempts)
		assert.True(t, strings.HasPrefix(dl.LastError, `no queue is bound to exchange "`+x+`" with routing key "order.paid"`), dl.LastError)
	}
	h, err := d.Webhooks().Health(ctx, w.ID)
	require.NoError(t, err)
	assert.Equal(t, webhooks.CircuitOpen, h.State, "the breaker counted the unroutable attempts")
	assert.Equal(t, breakAfter, h.ConsecutiveFailures)
	res, err := d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "evt_parked"})
	require.NoError(t, err)
	assert.Zero(t, res[0].Delivery.Attempts, "an open circuit parks the next delivery")
}
