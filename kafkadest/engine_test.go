package kafkadest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/kafkadest"
	"github.com/smartdrop/webhooks/verify"
)

// body is the part of a record's Standard Webhooks body the tests read.
type body struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data struct {
		Key string `json:"key"`
		Seq int    `json:"seq"`
	} `json:"data"`
}

func parseBody(t testing.TB, raw []byte) body {
	t.Helper()
	var b body
	require.NoError(t, json.Unmarshal(raw, &b), "%s", raw)
	return b
}

// TestDispatchTwiceWritesEachEventOnce: 1,000 events, each dispatched twice from 16 goroutines
// through 3 Dispatchers (replicas on one Redis, each with its own Kafka destination, as separate
// processes have), to one kafka:// webhook: the topic holds exactly 1,000 records, one per event,
// each keyed by its event id, carrying its delivery's webhook-id, and verifying with verify and the
// webhook's secret exactly as an HTTP receiver verifies a request.
func TestDispatchTwiceWritesEachEventOnce(t *testing.T) {
	t.Parallel()
	const events, callers, replicas = 1000, 16, 3
	ctx := context.Background()
	c := newCluster(t)
	topic := c.createTopic(t, 8)
	_, rdb := newRedis(t)
	ds := make([]*webhooks.Dispatcher, replicas)
	for i := range ds {
		ds[i] = newDispatcher(t, rdb, "kd", newDestination(t, kafkadest.Options{}), webhooks.Options{})
	}
	w, err := ds[0].Webhooks().Create(ctx, webhooks.Webhook{URL: c.url(topic), Events: []string{"order.*"}})
	require.NoError(t, err)

	type job struct{ event, replica int }
	jobs := make([]job, 0, 2*events)
	for i := range events {
		jobs = append(jobs, job{i, i % replicas}, job{i, (i + 1) % replicas})
	}
	rand.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	queue := make(chan job, len(jobs))
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	var mu sync.Mutex
	deliveryOf := map[string]string{} // event id -> delivery id (webhook-id)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for j := range queue {
				evt := webhooks.Event{Type: "order.paid", ID: fmt.Sprintf("evt-%04d", j.event), Data: map[string]int{"seq": j.event}}
				res, err := ds[j.replica].Dispatch(ctx, evt)
				if !assert.NoError(t, err) || !assert.Len(t, res, 1) || !assert.NotNil(t, res[0].Delivery, "%v", res[0].Err) {
					continue
				}
				mu.Lock()
				if prev, ok := deliveryOf[evt.ID]; ok {
					assert.Equal(t, prev, res[0].Delivery.ID, "one delivery per (webhook, event)")
				}
				deliveryOf[evt.ID] = res[0].Delivery.ID
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, deliveryOf, events)
	// An attempt a Dispatch deferred (ErrDeferred) is the worker's to make.
	runWorker(t, ds[0])
	ids := make([]string, 0, events)
	for _, id := range deliveryOf {
		ids = append(ids, id)
	}
	waitDelivered(t, ds[0], ids)

	require.EqualValues(t, events, c.count(t, topic), "records at the broker: one per event")
	v, err := verify.New(w.Secret)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, r := range c.records(t, topic, events) {
		h := headerOf(r)
		b := parseBody(t, r.Value)
		id := h.Get("webhook-id")
		assert.Equal(t, deliveryOf[b.ID], id, "event %s: the record's webhook-id is its delivery's", b.ID)
		assert.Equal(t, b.ID, string(r.Key), "the record's key is the event id (no OrderKey)")
		assert.NoError(t, v.Verify(h, r.Value), "event %s: the signature verifies", b.ID)
		assert.False(t, seen[id], "webhook-id %s twice", id)
		seen[id] = true
	}
	assert.Len(t, seen, events)
}
