package kafkadest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/kafkadest"
	"github.com/smartdrop/webhooks/verify"
)

// A Kafka destination: a webhook whose URL is kafka://BROKERS/TOPIC gets each event as a record of
// TOPIC, and a consumer verifies it with verify, exactly as an HTTP receiver verifies a request. The
// topic must exist: the destination never creates one. (It needs a Redis and a Kafka broker, so it
// has no Output to check: TestExample runs it against an in-process broker.)
func Example() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	out, err := exampleDeliverAndConsume(ctx, rdb, "127.0.0.1:9092", "orders")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
}

// exampleDeliverAndConsume is Example's body: it dispatches an event to a kafka:// webhook on
// brokers, then consumes the record from topic and verifies it.
func exampleDeliverAndConsume(ctx context.Context, rdb redis.UniversalClient, brokers, topic string) (string, error) {
	kd, err := kafkadest.New(kafkadest.Options{})
	if err != nil {
		return "", err
	}
	defer kd.Close()
	d, err := webhooks.New(rdb, webhooks.Options{
		Destinations: []webhooks.Destination{kd},
		// The broker is on loopback here: let the egress guard through (tests and demos only).
		AllowPrivateNetworks: true,
	})
	if err != nil {
		return "", err
	}
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: "kafka://" + brokers + "/" + topic, Events: []string{"order.*"}})
	if err != nil {
		return "", err
	}
	res, err := d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "ord_1001", OrderKey: "customer-42",
		Data: map[string]any{"amount": 4200}})
	if err != nil {
		return "", err
	}
	fmt.Println("delivery:", res[0].Delivery.Status, res[0].Delivery.History[0].Response)

	// The consumer's side: any Kafka client; the record's headers are the Standard Webhooks headers.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return "", err
	}
	defer consumer.Close()
	v, err := verify.New(w.Secret) // the webhook's secret, as an HTTP receiver has it
	if err != nil {
		return "", err
	}
	pollCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		fetches := consumer.PollFetches(pollCtx)
		if err := pollCtx.Err(); err != nil {
			return "", errors.New("no record within 10s")
		}
		if recs := fetches.Records(); len(recs) > 0 {
			rec := recs[0]
			h := http.Header{}
			for _, rh := range rec.Headers {
				h.Add(rh.Key, string(rh.Value))
			}
			if err := v.Verify(h, rec.Value); err != nil {
				return "", fmt.Errorf("the record does not verify: %w", err)
			}
			return fmt.Sprintf("verified record key=%s webhook-id=%t body=%s", rec.Key, h.Get("webhook-id") == res[0].Delivery.ID, rec.Value[:1]), nil
		}
	}
}

// TestExample runs Example's body against an in-process Kafka and a miniredis.
func TestExample(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.NumBrokers(1))
	topic := c.createTopic(t, 3)
	_, rdb := newRedis(t)
	out, err := exampleDeliverAndConsume(context.Background(), rdb, strings.Join(c.addrs(), ","), topic)
	require.NoError(t, err)
	require.Equal(t, "verified record key=customer-42 webhook-id=true body={", out)
}
