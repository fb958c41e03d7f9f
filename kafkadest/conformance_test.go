package kafkadest_test

import (
	"context"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/destination/destinationtest"
	"github.com/smartdrop/webhooks/kafkadest"
)

// TestConformance runs the destination conformance suite against an in-process Kafka whose
// brokers would create a topic on demand (kfake.AllowAutoTopicCreation): the missing topic must
// fail all the same, so the destination never asks for one to be created.
func TestConformance(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.NumBrokers(3), kfake.AllowAutoTopicCreation())
	var mu sync.Mutex
	consumers := map[string]*kgo.Client{} // by topic: each Receive returns what arrived since the last
	destinationtest.Run(t, destinationtest.Harness{
		New: func(t *testing.T) destination.Destination {
			d, err := kafkadest.New(kafkadest.Options{})
			require.NoError(t, err)
			return d
		},
		Target: func(t *testing.T) *url.URL {
			u, err := url.Parse(c.url(c.createTopic(t, 4)))
			require.NoError(t, err)
			return u
		},
		Receive: func(ctx context.Context, t *testing.T, u *url.URL, n int) []destinationtest.Received {
			topic := u.Path[1:]
			mu.Lock()
			kc := consumers[topic]
			if kc == nil {
				var err error
				kc, err = kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.ConsumeTopics(topic),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
				require.NoError(t, err)
				consumers[topic] = kc
				t.Cleanup(kc.Close)
			}
			mu.Unlock()
			var out []destinationtest.Received
			for len(out) < n && ctx.Err() == nil {
				kc.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
					h := headerOf(r)
					out = append(out, destinationtest.Received{ID: h.Get("webhook-id"), Header: h, Body: r.Value})
				})
			}
			return out
		},
		Missing: func(t *testing.T) *url.URL {
			topic := topicName(t)
			t.Cleanup(func() {
				require.False(t, c.topicExists(t, topic), "a Send to a missing topic created it")
			})
			u, err := url.Parse(c.url(topic))
			require.NoError(t, err)
			return u
		},
		Unreachable: func(t *testing.T) *url.URL {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			addr := ln.Addr().String()
			require.NoError(t, ln.Close()) // nothing listens there now
			u, err := url.Parse("kafka://" + addr + "/orders")
			require.NoError(t, err)
			return u
		},
		Invalid: []string{
			"kafka://127.0.0.1:9092",                       // no topic
			"kafka://127.0.0.1:9092/",                      // no topic
			"kafka://127.0.0.1:9092/a/b",                   // two segments
			"kafka://127.0.0.1:9092/or ders",               // a space
			"kafka://127.0.0.1:9092/..",                    // not a name
			"kafka://127.0.0.1:9092,/orders",               // an empty seed
			"kafka://127.0.0.1:9092/orders?acks=1",         // an unknown parameter
			"kafka://u:p@127.0.0.1:9092/orders?sasl=plain", // a mechanism it does not use
			"kafka://u@127.0.0.1:9092/orders",              // a user without a password
			"kafka://127.0.0.1:9092/orders?sasl=scram-sha-256",
			"kafka://127.0.0.1:9092/orders#frag",
			"kafka://127.0.0.1:9092/" + strings.Repeat("a", 250),
		},
	})
}
