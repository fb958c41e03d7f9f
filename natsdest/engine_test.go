package natsdest_test

// The engine's guarantees through a NATS JetStream destination, against the machine's NATS: the
// messages the stream holds, their headers and signatures, their order, their count.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/internal/testproxy"
	"github.com/smartdrop/webhooks/natsdest"
	"github.com/smartdrop/webhooks/verify"
)

// body is the part of a message's Standard Webhooks body the tests read.
type body struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data struct {
		Key string `json:"key"`
		N   int    `json:"n"`
	} `json:"data"`
}

// TestEventsDispatchedTwiceReachTheStreamOnce: 1,000 events, each dispatched twice, from 16
// goroutines through 3 Dispatchers (one Redis) to one NATS webhook, put exactly 1,000 messages in
// the stream, one per event, each with its delivery's webhook-id as Nats-Msg-Id and webhook-id, and
// a signature that verifies with the webhook's secret.
func TestEventsDispatchedTwiceReachTheStreamOnce(t *testing.T) {
	t.Parallel()
	const events, callers = 1000, 16
	ctx := context.Background()
	b := newBroker(t)
	stream, subject := b.stream(t)
	mr := miniredis.RunT(t)
	prefix := "nt_" + unique(t)
	var ds [3]*webhooks.Dispatcher
	for i := range ds {
		ds[i] = newDispatcher(t, mr, prefix, webhooks.Options{AllowPrivateNetworks: true,
			Destinations: []webhooks.Destination{newDest(t, natsdest.Options{})}})
	}
	w, err := ds[0].Webhooks().Create(ctx, webhooks.Webhook{URL: b.target(subject, "").String(), Events: []string{"order.*"}})
	require.NoError(t, err)
	for _, d := range ds {
		runWorker(t, d) // an event a Dispatcher defers to its worker is delivered too
	}

	type job struct {
		n int
		d *webhooks.Dispatcher
	}
	jobs := make([]job, 0, 2*events)
	ids := make([]string, events)
	for n := range events {
		ids[n] = fmt.Sprintf("evt_%04d", n)
		jobs = append(jobs, job{n, ds[n%3]}, job{n, ds[(n+1)%3]}) // twice, through two Dispatchers
	}
	rand.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	var wg sync.WaitGroup
	errs := make(chan error, len(jobs))
	for g := range callers {
		wg.Go(func() {
			for i := g; i < len(jobs); i += callers {
				j := jobs[i]
				res, err := j.d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: ids[j.n], Data: map[string]any{"n": j.n}})
				if err == nil && (len(res) != 1 || res[0].Err != nil) {
					err = fmt.Errorf("dispatch %s: %+v", ids[j.n], res)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	delivered := waitDelivered(t, ds[0], w.ID, ids)

	readCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	msgs := b.read(readCtx, t, stream, 1, events)
	require.Len(t, msgs, events, "one message per event")
	require.EqualValues(t, events, b.count(t, stream), "exactly one message per event, none more")
	v, err := verify.New(w.Secret)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, m := range msgs {
		id := m.Header.Get("Nats-Msg-Id")
		require.NotEmpty(t, id)
		assert.False(t, seen[id], "message %s twice", id)
		seen[id] = true
		assert.Equal(t, id, http.Header(m.Header).Get("webhook-id"), "Nats-Msg-Id is the webhook-id")
		require.NoError(t, v.Verify(http.Header(m.Header), m.Data), "message %s: a consumer verifies it as an HTTP receiver does", id)
		var bd body
		require.NoError(t, json.Unmarshal(m.Data, &bd))
		dl := delivered[bd.ID]
		require.NotNil(t, dl, "message of unknown event %s", bd.ID)
		assert.Equal(t, dl.ID, id, "event %s: the message's id is its delivery's webhook-id", bd.ID)
	}
	assert.Len(t, seen, events)
}

// failureWords are the words a failed attempt may say while a proxy in front of the broker is down
// or cuts a connection: the server's address, no Go error.
var failureWords = regexp.MustCompile(`^(the connection to the NATS server at 127\.0\.0\.1:\d+ (is lost: reconnecting|was lost before JetStream acknowledged the message on subject "[^"]+"|was closed)` +
	`|cannot connect to the NATS server at 127\.0\.0\.1:\d+: (the connection( to 127\.0\.0\.1:\d+)? was (refused|reset|closed before an answer)|no answer within the timeout|no server answered))$`)

// TestBrokerDownFiveSeconds: with the broker unreachable through a proxy for 5 s while events flow,
// attempts fail in words, and once it is back the retries deliver every event, each once: the stream
// holds exactly one message per event.
func TestBrokerDownFiveSeconds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newProxied(t, 500*time.Millisecond, nil)
	b, stream, proxy, d, w := p.broker, p.stream, p.proxy, p.d, p.w

	var ids []string
	dispatch := func(n int) {
		id := fmt.Sprintf("evt_%03d", n)
		ids = append(ids, id)
		res, err := d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: id, Data: map[string]any{"n": n}})
		require.NoError(t, err)
		require.Len(t, res, 1)
	}
	dispatch(0) // connected
	waitDelivered(t, d, w.ID, ids)

	proxy.Down()
	downAt := time.Now()
	n := 1
	for time.Since(downAt) < 5*time.Second { // events flow while the broker is unreachable
		dispatch(n)
		n++
		time.Sleep(100 * time.Millisecond)
	}
	during := append([]string(nil), ids[1:]...)
	proxy.Up()
	for range 20 {
		dispatch(n)
		n++
	}
	delivered := waitDelivered(t, d, w.ID, ids)

	failed := 0
	for _, id := range during {
		dl := delivered[id]
		require.Greater(t, len(dl.History), 1, "%s was attempted while the broker was unreachable", id)
		for _, a := range dl.History[:len(dl.History)-1] {
			if assert.NotEmpty(t, a.Error, "%s: a failed attempt has words", id) {
				failed++
				assert.Regexp(t, failureWords, a.Error)
			}
		}
	}
	assert.Positive(t, failed)
	readCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	msgs := b.read(readCtx, t, stream, 1, len(ids))
	got := map[string]int{}
	for _, m := range msgs {
		var bd body
		require.NoError(t, json.Unmarshal(m.Data, &bd))
		got[bd.ID]++
	}
	for _, id := range ids {
		assert.Equal(t, 1, got[id], "event %s: messages in the stream", id)
	}
	assert.EqualValues(t, len(ids), b.count(t, stream), "nothing twice: the stream holds one message per event")
}

// TestLostAckLeavesOneMessage: a publish that reached the stream, whose ack the proxy cut, fails the
// attempt in words; the retry, with the same Nats-Msg-Id, is acked as a duplicate (the delivery
// records it) and the stream holds the message once.
func TestLostAckLeavesOneMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newProxied(t, 300*time.Millisecond, nil)
	b, stream, subject, proxy, d, w := p.broker, p.stream, p.subject, p.proxy, p.d, p.w

	res, err := d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "warm"}) // the connection is made
	require.NoError(t, err)
	require.Equal(t, webhooks.StatusSuccess, res[0].Delivery.Status, res[0].Delivery.LastError)

	proxy.CutNextReply() // the next bytes from the server, the publish's ack, are lost with the connection
	res, err = d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "lost"})
	require.NoError(t, err)
	first := res[0].Delivery
	require.NotEqual(t, webhooks.StatusSuccess, first.Status, "the attempt whose ack was lost must not succeed")
	assert.Equal(t, fmt.Sprintf("the connection to the NATS server at %s was lost before JetStream acknowledged the message on subject %q", proxy.Addr(), subject),
		first.LastError)

	dl := waitDelivered(t, d, w.ID, []string{"lost"})["lost"]
	last := dl.History[len(dl.History)-1]
	assert.Regexp(t, `^stream `+stream+`, sequence 2, duplicate$`, last.Response, "the retry was acked as a duplicate: the stream had the message")
	readCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	msgs := b.read(readCtx, t, stream, 1, 2)
	require.Len(t, msgs, 2)
	assert.Equal(t, dl.ID, msgs[1].Header.Get("Nats-Msg-Id"))
	assert.EqualValues(t, 2, b.count(t, stream), "the lost-ack message is in the stream once")
}

// TestOrderKeyInOrderWhilePublishesFail: 5 keys × 50 ordered events reach the stream in order per
// key, each once, while the proxy fails 10% of the publishes (the connection cut at their ack).
func TestOrderKeyInOrderWhilePublishesFail(t *testing.T) {
	t.Parallel()
	const keys, perKey = 5, 50
	ctx := context.Background()
	var dest *cutting
	p := newProxied(t, 200*time.Millisecond, func(nd *natsdest.Destination, proxy *testproxy.Proxy) webhooks.Destination {
		dest = &cutting{Destination: nd, proxy: proxy, every: 10}
		return dest
	})
	b, stream, d, w := p.broker, p.stream, p.d, p.w

	var ids []string
	for k := range keys {
		for n := range perKey {
			ids = append(ids, fmt.Sprintf("k%d_%02d", k, n))
		}
	}
	var wg sync.WaitGroup
	for k := range keys {
		wg.Go(func() {
			for n := range perKey {
				_, err := d.Enqueue(ctx, webhooks.Event{Type: "order.paid", ID: fmt.Sprintf("k%d_%02d", k, n), OrderKey: fmt.Sprintf("k%d", k),
					Data: map[string]any{"key": fmt.Sprintf("k%d", k), "n": n}})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	delivered := waitDelivered(t, d, w.ID, ids)

	attempts := 0
	for _, dl := range delivered {
		attempts += dl.Attempts
	}
	assert.Positive(t, dest.cuts.Load())
	assert.Greater(t, attempts, keys*perKey, "some publishes failed and were retried")
	readCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	msgs := b.read(readCtx, t, stream, 1, keys*perKey)
	require.Len(t, msgs, keys*perKey)
	require.EqualValues(t, keys*perKey, b.count(t, stream), "each event once")
	order := map[string][]int{}
	for _, m := range msgs {
		var bd body
		require.NoError(t, json.Unmarshal(m.Data, &bd))
		order[bd.Data.Key] = append(order[bd.Data.Key], bd.Data.N)
	}
	want := make([]int, perKey)
	for n := range want {
		want[n] = n
	}
	for k := range keys {
		assert.Equal(t, want, order[fmt.Sprintf("k%d", k)], "key k%d in order, each once", k)
	}
}

// TestNoStreamFailsInWordsAndOpensTheCircuit: a subject no stream takes fails each attempt in words
// that say what to do, and the circuit breaker counts those failures: it opens after BreakAfter.
func TestNoStreamFailsInWordsAndOpensTheCircuit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newBroker(t)
	subject := "wh.nostream." + strings.ToLower(unique(t))
	d := newDispatcher(t, miniredis.RunT(t), "nt_"+unique(t), webhooks.Options{AllowPrivateNetworks: true, BreakAfter: 2,
		BreakFor: time.Minute, RetrySchedule: shortRetries(3, time.Minute),
		Destinations: []webhooks.Destination{newDest(t, natsdest.Options{})}})
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: b.target(subject, "").String(), Events: []string{"*"}})
	require.NoError(t, err)
	words := fmt.Sprintf("no JetStream stream takes subject %q: create a stream whose subjects include it", subject)
	for i, id := range []string{"e1", "e2"} {
		h, err := d.Webhooks().Health(ctx, w.ID)
		require.NoError(t, err)
		assert.Equal(t, webhooks.CircuitClosed, h.State, "after %d failures", i)
		res, err := d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: id})
		require.NoError(t, err)
		require.Len(t, res, 1)
		assert.Equal(t, webhooks.StatusPending, res[0].Delivery.Status, "retried")
		assert.Equal(t, words, res[0].Delivery.LastError)
	}
	h, err := d.Webhooks().Health(ctx, w.ID)
	require.NoError(t, err)
	assert.Equal(t, webhooks.CircuitOpen, h.State, "the breaker counted the failures")
}

// TestTenantBrokerGuardedAndPasswordSealed: a broker URL on a private address is refused at Create by
// default; a URL's password reaches the broker, but no Redis key or value (SecretKeys set) nor any
// admin API answer holds it, nor any failure's words.
func TestTenantBrokerGuardedAndPasswordSealed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newBroker(t)
	const password = "nats-Pa55-Zq7wX"
	mr := miniredis.RunT(t)
	dest := newDest(t, natsdest.Options{})

	guarded := newDispatcher(t, mr, "nt_guarded_"+unique(t), webhooks.Options{Destinations: []webhooks.Destination{dest}})
	_, err := guarded.Webhooks().Create(ctx, webhooks.Webhook{URL: "nats://tenant:" + password + "@10.0.0.1:4222/orders", Events: []string{"*"}})
	require.ErrorIs(t, err, webhooks.ErrBlockedAddress, "a broker on a private address is refused at Create")
	assert.NotContains(t, err.Error(), password)

	_, subject := b.stream(t)
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i + 1)
	}
	d := newDispatcher(t, mr, "nt_sealed_"+unique(t), webhooks.Options{AllowPrivateNetworks: true, SecretKeys: [][]byte{key},
		RetrySchedule: shortRetries(2, time.Minute), Destinations: []webhooks.Destination{dest}})
	u := b.target(subject, "")
	u.User = nil
	withPassword := strings.Replace(u.String(), "nats://", "nats://tenant:"+password+"@", 1)
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: withPassword, Events: []string{"order.*"}})
	require.NoError(t, err)
	missing, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: strings.Replace(withPassword, subject, "wh.nostream."+strings.ToLower(unique(t)), 1),
		Events: []string{"order.*"}})
	require.NoError(t, err)
	res, err := d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "e1"})
	require.NoError(t, err)
	require.Len(t, res, 2)
	var deliveries []string
	for _, r := range res {
		deliveries = append(deliveries, r.Delivery.ID)
		want := webhooks.StatusSuccess
		if r.WebhookID == missing.ID {
			want = webhooks.StatusPending
			assert.Contains(t, r.Delivery.LastError, "no JetStream stream takes subject")
		}
		assert.Equal(t, want, r.Delivery.Status, r.Delivery.LastError)
		assert.NotContains(t, r.Delivery.LastError, password)
	}

	for k, v := range redisValues(t, mr) {
		assert.NotContains(t, k, password, "a key holds the password")
		assert.NotContains(t, v, password, "key %s holds the password", k)
	}
	h := d.Handler()
	paths := []string{"/webhooks", "/webhooks/" + w.ID, "/webhooks/" + missing.ID}
	for _, id := range deliveries {
		paths = append(paths, "/deliveries/"+id, "/deliveries/"+id+"/request")
	}
	for _, path := range paths {
		rec := httpGet(h, path)
		require.Equal(t, http.StatusOK, rec.Code, "%s: %s", path, rec.Body.String())
		assert.NotContains(t, rec.Body.String(), password, path)
	}
	assert.Contains(t, httpGet(h, "/webhooks/"+w.ID).Body.String(), "nats://tenant:xxxxx@", "the URL is shown, its password masked")
}
