package kafkadest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/kafkadest"
	"github.com/smartdrop/webhooks/verify"
)

// onProduce runs fn on every produce request the brokers get, numbered from 1, before they handle
// it; fn returning true drops the request unhandled (the broker closes its connection: nothing is
// written).
func (c *cluster) onProduce(fn func(n int) (drop bool)) {
	var n atomic.Int64
	c.kf.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		if fn(int(n.Add(1))) {
			c.kf.KeepControl()
			return nil, errors.New("dropped by the test"), true
		}
		return nil, nil, false
	})
}

// proxiesDown takes every broker's proxy down (every connection dropped, new ones refused).
func (c *cluster) proxiesDown() {
	for _, p := range c.proxies {
		p.Down()
	}
}

// proxiesUp brings every broker's proxy up again.
func (c *cluster) proxiesUp() {
	for _, p := range c.proxies {
		p.Up()
	}
}

// cutNextReply arms the proxies to drop the connection that next carries a broker's answer.
func (c *cluster) cutNextReply() {
	for _, p := range c.proxies {
		p.CutNextReply()
	}
}

// failedAttempts are the failed attempts' errors of the deliveries ids.
func failedAttempts(t testing.TB, d *webhooks.Dispatcher, ids []string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		dl, err := d.Deliveries().Get(context.Background(), id)
		require.NoError(t, err)
		for _, a := range dl.History {
			if a.Error != "" {
				out = append(out, a.Error)
			}
		}
	}
	return out
}

// assertOutageWords checks that each failure says in words that the brokers could not be reached or
// did not answer in time (the message's or an earlier one's ahead of it in its partition), naming
// them, and carries no raw Go error.
func assertOutageWords(t testing.TB, failures []string, brokers string) {
	t.Helper()
	for _, f := range failures {
		ok := strings.HasPrefix(f, "could not reach the Kafka brokers ("+brokers+"): ") ||
			f == "the Kafka brokers ("+brokers+") did not acknowledge the message within the timeout" ||
			f == "the Kafka brokers ("+brokers+") did not acknowledge an earlier message to the same partition "+
				"before its attempt's timeout, and the client gave up this message, queued behind it, with it"
		assert.True(t, ok, "a failure not in words: %q", f)
		assert.NotContains(t, f, "context deadline exceeded")
	}
}

// TestBrokerDownThenUp: the broker unreachable for 5 s (its proxy down) while events flow: the
// attempts fail in words, the retries deliver every event once the proxy is up, and the topic holds
// each event once.
func TestBrokerDownThenUp(t *testing.T) {
	t.Parallel()
	const events = 100
	ctx := context.Background()
	c := newProxiedCluster(t, kfake.NumBrokers(1))
	topic := c.createTopic(t, 4)
	_, rdb := newRedis(t)
	d := newDispatcher(t, rdb, "down", newDestination(t, kafkadest.Options{}), webhooks.Options{
		Timeout: time.Second, BreakAfter: -1, RetrySchedule: repeat(300*time.Millisecond, 60)})
	_, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: c.url(topic), Events: []string{"*"}})
	require.NoError(t, err)
	runWorker(t, d)

	var ids []string
	for i := range events {
		if i == 20 {
			c.proxiesDown()
			time.AfterFunc(5*time.Second, c.proxiesUp)
		}
		res, err := d.Enqueue(ctx, webhooks.Event{Type: "t", ID: fmt.Sprintf("e%03d", i), Data: map[string]int{"seq": i}})
		require.NoError(t, err)
		require.Len(t, res, 1)
		ids = append(ids, res[0].Delivery.ID)
		time.Sleep(80 * time.Millisecond)
	}
	waitDelivered(t, d, ids)

	failures := failedAttempts(t, d, ids)
	require.NotEmpty(t, failures, "attempts were made while the broker was unreachable")
	assertOutageWords(t, failures, c.addrs()[0])
	t.Logf("%d failed attempts, e.g. %q", len(failures), failures[0])

	require.EqualValues(t, events, c.count(t, topic), "each event written once")
	seqs := map[int]bool{}
	for _, r := range c.records(t, topic, events) {
		seqs[parseBody(t, r.Value).Data.Seq] = true
	}
	assert.Len(t, seqs, events)
}

// repeat is n times d.
func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// lostAck arms the cluster so that produce request number at (counted from arming) is written but
// its answer lost: the proxy cuts the connection carrying it. With down set, the client's resend of
// it on a new connection is dropped unhandled and the proxies go down, until up is called.
func (c *cluster) lostAck(down bool) (produces *atomic.Int64) {
	produces = &atomic.Int64{}
	c.onProduce(func(int) bool {
		switch produces.Add(1) {
		case 1:
			c.cutNextReply() // after the publish, before its answer
		case 2:
			if down {
				c.proxiesDown()
				return true
			}
		}
		return false
	})
	return produces
}

// TestLostAck: the brokers write a record whose answer is lost (the proxy drops the connection
// after the publish, before the ack).
//
//   - When the connection comes back within the attempt, the idempotent producer resends the
//     produce with its sequence number, the broker recognises it, and the attempt succeeds: one
//     record, one attempt.
//   - When the brokers stay unreachable past the attempt's timeout, the attempt fails in words;
//     the destination keeps the produce, and the retry through the same Destination waits for it
//     and succeeds with it: still one record.
//   - When the retry is made by another process (another Dispatcher with its own Destination), it
//     writes a new record: one repeat, with the same webhook-id header, which a consumer
//     deduplicates on; both verify.
func TestLostAck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(t *testing.T, replicas int) (*cluster, string, []*webhooks.Dispatcher, *webhooks.Webhook) {
		c := newProxiedCluster(t, kfake.NumBrokers(1))
		topic := c.createTopic(t, 1)
		_, rdb := newRedis(t)
		var ds []*webhooks.Dispatcher
		for range replicas {
			ds = append(ds, newDispatcher(t, rdb, "ack", newDestination(t, kafkadest.Options{}), webhooks.Options{
				Timeout: time.Second, BreakAfter: -1, RetrySchedule: repeat(500*time.Millisecond, 20)}))
		}
		w, err := ds[0].Webhooks().Create(ctx, webhooks.Webhook{URL: c.url(topic), Events: []string{"*"}})
		require.NoError(t, err)
		for _, d := range ds { // connected, the topic's metadata known: the next produce is the event's
			res, err := d.Dispatch(ctx, webhooks.Event{Type: "warm", ID: "warm-" + randomHex(4)})
			require.NoError(t, err)
			require.Equal(t, webhooks.StatusSuccess, res[0].Delivery.Status, res[0].Delivery.LastError)
		}
		return c, topic, ds, w
	}
	// event is the records of the event's delivery (the warm-up records left out).
	eventRecords := func(t *testing.T, c *cluster, topic string, warm int) []recordView {
		n := int(c.count(t, topic))
		var out []recordView
		for _, r := range c.records(t, topic, n) {
			if b := parseBody(t, r.Value); b.Type == "t" {
				out = append(out, recordView{header: headerOf(r), value: r.Value})
			}
		}
		require.Equal(t, n-warm, len(out))
		return out
	}

	t.Run("connection back at once", func(t *testing.T) {
		t.Parallel()
		c, topic, ds, _ := setup(t, 1)
		produces := c.lostAck(false)
		res, err := ds[0].Dispatch(ctx, webhooks.Event{Type: "t", ID: "e1"})
		require.NoError(t, err)
		dl := res[0].Delivery
		assert.Equal(t, webhooks.StatusSuccess, dl.Status, dl.LastError)
		assert.Len(t, dl.History, 1, "the client's own resend succeeded within the attempt")
		assert.GreaterOrEqual(t, produces.Load(), int64(2), "the produce was sent again after the lost answer")
		assert.Len(t, eventRecords(t, c, topic, 1), 1, "the broker dropped the resend: one record")
	})

	t.Run("retried by the same destination", func(t *testing.T) {
		t.Parallel()
		c, topic, ds, _ := setup(t, 1)
		c.lostAck(true)
		res, err := ds[0].Dispatch(ctx, webhooks.Event{Type: "t", ID: "e1"})
		require.NoError(t, err)
		dl := res[0].Delivery
		require.Equal(t, webhooks.StatusPending, dl.Status, "the attempt failed: no answer within its time")
		assertOutageWords(t, []string{dl.LastError}, c.addrs()[0])
		c.proxiesUp()
		runWorker(t, ds[0])
		waitDelivered(t, ds[0], []string{dl.ID})
		got, err := ds[0].Deliveries().Get(ctx, dl.ID)
		require.NoError(t, err)
		require.Len(t, got.History, 2)
		assert.Contains(t, got.History[1].Response, "written by an earlier attempt")
		assert.Len(t, eventRecords(t, c, topic, 1), 1, "the retry waited for the earlier produce: one record")
	})

	t.Run("retried by another process", func(t *testing.T) {
		t.Parallel()
		c, topic, ds, w := setup(t, 2)
		c.lostAck(true)
		res, err := ds[0].Dispatch(ctx, webhooks.Event{Type: "t", ID: "e1"})
		require.NoError(t, err)
		dl := res[0].Delivery
		require.Equal(t, webhooks.StatusPending, dl.Status)
		c.proxiesUp()
		runWorker(t, ds[1]) // the other process makes the retry
		waitDelivered(t, ds[1], []string{dl.ID})
		recs := eventRecords(t, c, topic, 2)
		require.Len(t, recs, 2, "at most one repeat: the earlier attempt's record and the retry's")
		v, err := verify.New(w.Secret)
		require.NoError(t, err)
		for _, r := range recs {
			assert.Equal(t, dl.ID, r.header.Get("webhook-id"), "the repeat carries the same webhook-id")
			assert.NoError(t, v.Verify(r.header, r.value))
		}
	})
}

// recordView is a record as a consumer rebuilds it.
type recordView struct {
	header http.Header
	value  []byte
}

// TestOrderKeyKeepsOrderThroughFaults: 5 keys × 50 events with an OrderKey, while the proxy fails
// one produce in ten (alternately: its answer lost, or the request dropped before the broker
// handles it; either way the brokers unreachable past the attempt's timeout): every event arrives,
// once, and each key's events in the order they were enqueued.
func TestOrderKeyKeepsOrderThroughFaults(t *testing.T) {
	t.Parallel()
	const keys, perKey, maxFaults = 5, 50, 25
	const timeout = 400 * time.Millisecond
	ctx := context.Background()
	c := newProxiedCluster(t, kfake.NumBrokers(1))
	topic := c.createTopic(t, 3)
	_, rdb := newRedis(t)
	d := newDispatcher(t, rdb, "order", newDestination(t, kafkadest.Options{}), webhooks.Options{
		Timeout: timeout, BreakAfter: -1, RetrySchedule: repeat(100*time.Millisecond, 100)})
	_, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: c.url(topic), Events: []string{"*"}})
	require.NoError(t, err)

	var faults atomic.Int64
	var dropNext atomic.Bool
	c.onProduce(func(n int) bool {
		if dropNext.CompareAndSwap(true, false) { // the resend after a lost answer: refused, proxies down
			c.proxiesDown()
			time.AfterFunc(timeout+200*time.Millisecond, c.proxiesUp)
			return true
		}
		if n%10 != 0 || faults.Load() >= maxFaults {
			return false
		}
		if faults.Add(1)%2 == 1 {
			c.cutNextReply() // written, its answer lost
			dropNext.Store(true)
			return false
		}
		c.proxiesDown() // dropped before it is written
		time.AfterFunc(timeout+200*time.Millisecond, c.proxiesUp)
		return true
	})
	runWorker(t, d)

	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	for k := range keys {
		wg.Go(func() {
			for i := range perKey {
				res, err := d.Enqueue(ctx, webhooks.Event{Type: "t", ID: fmt.Sprintf("k%d-%02d", k, i),
					OrderKey: fmt.Sprintf("key-%d", k), Data: map[string]any{"key": fmt.Sprintf("key-%d", k), "seq": i}})
				if !assert.NoError(t, err) || !assert.Len(t, res, 1) {
					return
				}
				mu.Lock()
				ids = append(ids, res[0].Delivery.ID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	waitDelivered(t, d, ids)

	failures := failedAttempts(t, d, ids)
	t.Logf("%d faults injected, %d failed attempts", faults.Load(), len(failures))
	assert.GreaterOrEqual(t, faults.Load(), int64(10), "the proxy failed publishes")
	assert.NotEmpty(t, failures, "attempts failed")
	assertOutageWords(t, failures, c.addrs()[0])

	require.EqualValues(t, keys*perKey, c.count(t, topic), "each event written once")
	got := map[string][]int{}
	for _, r := range c.records(t, topic, keys*perKey) {
		b := parseBody(t, r.Value)
		assert.Equal(t, b.Data.Key, string(r.Key), "the record's key is the OrderKey")
		got[b.Data.Key] = append(got[b.Data.Key], b.Data.Seq)
	}
	for k := range keys {
		key := fmt.Sprintf("key-%d", k)
		want := make([]int, perKey)
		for i := range want {
			want[i] = i
		}
		assert.Equal(t, want, got[key], "%s: every event once, in order", key)
	}
}
