package kafkadest_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/kafkadest"
)

// The workload of BenchmarkDeliveries (issue 6's, as cmd/webhooks-bench runs it for HTTP).
const (
	benchEvents   = 5000
	benchWebhooks = 4
	benchCallers  = 64
	benchPayload  = 512
)

// BenchmarkDeliveries measures, interleaved in each round (one round per b.N), on one in-process
// Kafka (kfake, 3 brokers, the same process: it shares the CPU with what it measures):
//
//   - broker: the broker's own produce rate with franz-go as the destination produces — one client,
//     acks=all, idempotent, no linger — 64 goroutines each producing one record (the same headers
//     and body size) and waiting for its ack (ProduceSync) before the next, 20,000 records to 4
//     topics: the limit;
//   - library: deliveries end to end through the Dispatcher — 5,000 events (512-byte data) to 4
//     kafka webhooks (a topic each, one cluster: one client), from 64 callers of Dispatch (inline),
//     with Run in the same process making the attempts Dispatch defers, until the 20,000 records
//     are in the topics.
//
// It reports the medians over the rounds: deliveries/s, produces/s, and the ratio of each round's
// figures. Redis is WEBHOOKS_REDIS_ADDR (its keys of the run are deleted after each round), else an
// embedded miniredis (slower: figures for a smoke check only).
//
//	flock /tmp/webhooks-heavy.lock env WEBHOOKS_REDIS_ADDR=127.0.0.1:6379 \
//		go test -run '^$' -bench BenchmarkDeliveries -benchtime 5x .
func BenchmarkDeliveries(b *testing.B) {
	c := newCluster(b, kfake.NumBrokers(3))
	rdb := benchRedis(b)
	var lib, raw, ratio []float64
	for round := 0; b.Loop(); round++ {
		r := benchRaw(b, c, benchTopics(b, c))
		l := benchLibrary(b, c, rdb, benchTopics(b, c), fmt.Sprintf("kafkabench%d-%d", time.Now().UnixNano(), round))
		raw, lib, ratio = append(raw, r), append(lib, l), append(ratio, l/r)
		b.Logf("round %d: library %.0f deliveries/s, broker %.0f produces/s, ratio %.2f", round, l, r, l/r)
	}
	b.ReportMetric(median(lib), "deliveries/s")
	b.ReportMetric(median(raw), "broker-produces/s")
	b.ReportMetric(median(ratio), "ratio")
}

// benchTopics creates benchWebhooks topics of 6 partitions.
func benchTopics(b *testing.B, c *cluster) []string {
	topics := make([]string, benchWebhooks)
	for i := range topics {
		topics[i] = c.createTopic(b, 6)
	}
	return topics
}

// benchRedis is WEBHOOKS_REDIS_ADDR's Redis, else an embedded miniredis.
func benchRedis(b *testing.B) *redis.Client {
	addr := os.Getenv("WEBHOOKS_REDIS_ADDR")
	if addr == "" {
		addr = miniredis.RunT(b).Addr()
		b.Log("Redis: embedded miniredis (set WEBHOOKS_REDIS_ADDR for a real Redis)")
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 4 * benchCallers})
	b.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// benchRaw produces benchEvents×benchWebhooks records as the limit does (see BenchmarkDeliveries)
// and returns the produces per second.
func benchRaw(b *testing.B, c *cluster, topics []string) float64 {
	kc, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0), kgo.DisableClientMetrics())
	require.NoError(b, err)
	defer kc.Close()
	ctx := context.Background()
	body := []byte(`{"id":"evt_0000000000000000","type":"pool.created","timestamp":"2026-12-06T00:00:00Z","data":{"note":"` +
		strings.Repeat("x", benchPayload) + `"}}`)
	// The topics' metadata and the connections, as in a running producer.
	for _, topic := range topics {
		require.NoError(b, kc.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: body}).FirstErr())
	}
	total := benchEvents * benchWebhooks
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range benchCallers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				r := &kgo.Record{Topic: topics[i%len(topics)], Key: fmt.Appendf(nil, "evt_%016d", i/len(topics)), Value: body,
					Headers: []kgo.RecordHeader{
						{Key: "content-type", Value: []byte("application/json")},
						{Key: "webhook-id", Value: fmt.Appendf(nil, "dlv_%028d", i)},
						{Key: "webhook-signature", Value: []byte("v1," + strings.Repeat("s", 44))},
						{Key: "webhook-timestamp", Value: []byte("1796515200")},
					}}
				if err := kc.ProduceSync(ctx, r).FirstErr(); err != nil {
					b.Errorf("produce %d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	rate := float64(total) / time.Since(start).Seconds()
	require.EqualValues(b, total+len(topics), benchCount(b, c, topics), "records in the topics")
	return rate
}

// benchLibrary dispatches benchEvents to benchWebhooks kafka webhooks (see BenchmarkDeliveries)
// and returns the deliveries per second; the run's Redis keys are deleted after.
func benchLibrary(b *testing.B, c *cluster, rdb *redis.Client, topics []string, prefix string) float64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dest, err := kafkadest.New(kafkadest.Options{})
	require.NoError(b, err)
	defer dest.Close()
	d, err := webhooks.New(rdb, webhooks.Options{KeyPrefix: prefix, Destinations: []webhooks.Destination{dest}, AllowPrivateNetworks: true})
	require.NoError(b, err)
	defer benchDeleteKeys(b, rdb, prefix)
	for _, topic := range topics {
		_, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: c.url(topic), Events: []string{"pool.*"}})
		require.NoError(b, err)
	}
	data := map[string]string{"pool_id": "pool_0000000042", "owner": "acct_7f3a9c", "note": strings.Repeat("x", benchPayload-60)}
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.Run(ctx) })
	defer wg.Wait() // after cancel (deferred later, run first)
	defer cancel()
	// A warm-up event per webhook: the client, its connections and the topics' metadata, as in a
	// running service.
	if _, err := d.Dispatch(ctx, webhooks.Event{Type: "pool.created", ID: "warm", Data: data}); err != nil {
		b.Fatal(err)
	}

	total := benchEvents*benchWebhooks + len(topics)
	var next atomic.Int64
	var callers sync.WaitGroup
	start := time.Now()
	for range benchCallers {
		callers.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= benchEvents {
					return
				}
				if _, err := d.Dispatch(ctx, webhooks.Event{Type: "pool.created", ID: fmt.Sprintf("evt_%016d", i), Data: data}); err != nil {
					b.Errorf("Dispatch: %v", err)
					return
				}
			}
		})
	}
	callers.Wait()
	for benchCount(b, c, topics) < int64(total) { // the deliveries Run makes
		time.Sleep(2 * time.Millisecond)
	}
	rate := float64(benchEvents*benchWebhooks) / time.Since(start).Seconds()
	require.EqualValues(b, total, benchCount(b, c, topics), "records in the topics")
	return rate
}

// benchCount is the number of records in topics.
func benchCount(b *testing.B, c *cluster, topics []string) int64 {
	var n int64
	for _, topic := range topics {
		n += c.count(b, topic)
	}
	return n
}

// benchDeleteKeys deletes the round's Redis keys.
func benchDeleteKeys(b *testing.B, rdb *redis.Client, prefix string) {
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, "*"+prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	require.NoError(b, iter.Err())
	for chunk := range slices.Chunk(keys, 500) {
		require.NoError(b, rdb.Del(ctx, chunk...).Err())
	}
}

// median is the middle of xs (the mean of the two middle ones for an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
