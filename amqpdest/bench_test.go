package amqpdest_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	webhooks "github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/amqpdest"
)

// The workload of BenchmarkDeliveries (issue 6's, as cmd/webhooks-bench runs it for HTTP).
const (
	benchEvents   = 5000
	benchWebhooks = 4
	benchCallers  = 64
	benchPayload  = 512
)

// BenchmarkDeliveries measures, interleaved in each round (one round per b.N):
//
//   - broker: the broker's own publish rate with amqp091-go and publisher confirms, as a
//     destination must publish — 64 goroutines, each on a channel of its own in confirm mode,
//     publishing 20,000 persistent, mandatory messages (the same headers and body size) to 4 queues,
//     each waiting for its message's confirm before the next: the limit;
//
//   - library: deliveries end to end through the Dispatcher — 5,000 events (512-byte data) to 4
//     amqp webhooks (one queue each, one connection), from 64 callers of Dispatch (inline), with
//     Run in the same process making the attempts Dispatch defers (over a webhook's share of
//     Concurrency), until the 20,000 messages are in the queues.
//
//   - nop: the library's run with a destination that does nothing (the engine's own bound here).
//
// It reports the medians over the rounds: deliveries/s, publishes/s, the ratio of each round's
// library and broker figures, and nop-deliveries/s. Redis is WEBHOOKS_REDIS_ADDR (its keys of the run are deleted after each round), else an
// embedded miniredis (slower: figures for a smoke check only).
//
//	flock /tmp/webhooks-heavy.lock env WEBHOOKS_AMQP_URL=amqp://guest:guest@127.0.0.1:5672/ \
//		WEBHOOKS_REDIS_ADDR=127.0.0.1:6379 go test -run '^$' -bench BenchmarkDeliveries -benchtime 5x .
func BenchmarkDeliveries(b *testing.B) {
	br := newBroker(b)
	queues := make([]string, benchWebhooks)
	for i := range queues {
		queues[i] = br.queue(fmt.Sprintf("bench%d", i))
	}
	rdb := benchRedis(b)
	var lib, raw, nop, ratio []float64
	for round := 0; b.Loop(); round++ {
		r := benchRaw(b, br, queues)
		l := benchLibrary(b, br, rdb, queues, fmt.Sprintf("amqpbench%d-%d", time.Now().UnixNano(), round), nil)
		var sent atomic.Int64
		n := benchLibrary(b, br, rdb, queues, fmt.Sprintf("amqpbench%d-%d-nop", time.Now().UnixNano(), round), &sent)
		raw, lib, nop, ratio = append(raw, r), append(lib, l), append(nop, n), append(ratio, l/r)
		b.Logf("round %d: library %.0f deliveries/s, broker %.0f publishes/s, ratio %.2f; engine with a do-nothing destination %.0f deliveries/s",
			round, l, r, l/r, n)
	}
	b.ReportMetric(median(lib), "deliveries/s")
	b.ReportMetric(median(raw), "broker-publishes/s")
	b.ReportMetric(median(ratio), "ratio")
	b.ReportMetric(median(nop), "nop-deliveries/s")
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

// benchRaw publishes benchEvents×benchWebhooks messages as the limit does (see BenchmarkDeliveries)
// and returns the publishes per second; the queues are purged after.
func benchRaw(b *testing.B, br *broker, queues []string) float64 {
	conn, err := amqp.Dial(br.url.String())
	require.NoError(b, err)
	defer conn.Close()
	body := []byte(`{"id":"evt_0000000000000000000000000","type":"pool.created","timestamp":"2026-12-06T00:00:00Z","data":{"note":"` +
		strings.Repeat("x", benchPayload) + `"}}`)
	headers := amqp.Table{
		"webhook-id":        "dlv_0000000000000000000000000000",
		"webhook-timestamp": "1796515200",
		"webhook-signature": "v1," + strings.Repeat("s", 44),
	}
	total := benchEvents * benchWebhooks
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range benchCallers {
		ch, err := conn.Channel()
		require.NoError(b, err)
		require.NoError(b, ch.Confirm(false))
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				dc, err := ch.PublishWithDeferredConfirm("", queues[i%len(queues)], true, false, amqp.Publishing{
					Headers: headers, ContentType: "application/json", DeliveryMode: amqp.Persistent,
					MessageId: fmt.Sprintf("dlv_%028d", i), Type: "pool.created", Body: body,
				})
				if err != nil || !dc.Wait() {
					b.Errorf("publish %d: %v (acked: %v)", i, err, err == nil)
					return
				}
			}
		})
	}
	wg.Wait()
	rate := float64(total) / time.Since(start).Seconds()
	benchPurge(b, br, queues, total)
	return rate
}

// benchLibrary dispatches benchEvents to benchWebhooks amqp webhooks (see BenchmarkDeliveries) and
// returns the deliveries per second; the queues are purged and the run's Redis keys deleted after.
// With nop set, the webhooks' destination does nothing but count its Sends in nop: the engine's own
// bound on this machine.
func benchLibrary(b *testing.B, br *broker, rdb *redis.Client, queues []string, prefix string, nop *atomic.Int64) float64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	amqpDest, err := amqpdest.New(amqpdest.Options{})
	require.NoError(b, err)
	defer amqpDest.Close()
	var dest webhooks.Destination = amqpDest
	if nop != nil {
		dest = &nopDest{Destination: amqpDest, sent: nop}
	}
	d, err := webhooks.New(rdb, webhooks.Options{KeyPrefix: prefix, Destinations: []webhooks.Destination{dest}, AllowPrivateNetworks: true})
	require.NoError(b, err)
	defer benchDeleteKeys(b, rdb, prefix)
	for _, q := range queues {
		_, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: br.target(url.Values{"routing_key": {q}}).String(), Events: []string{"pool.*"}})
		require.NoError(b, err)
	}
	data := map[string]string{"pool_id": "pool_0000000042", "owner": "acct_7f3a9c", "note": strings.Repeat("x", benchPayload-60)}
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.Run(ctx) })
	defer wg.Wait() // after cancel (deferred later, run first)
	defer cancel()
	// A warm-up event per webhook: the connection and a channel, as in a running service.
	if _, err := d.Dispatch(ctx, webhooks.Event{Type: "pool.created", ID: "warm", Data: data}); err != nil {
		b.Fatal(err)
	}
	messages := func() int {
		if nop != nil {
			return int(nop.Load())
		}
		return br.total(queues)
	}
	for messages() < benchWebhooks {
		time.Sleep(2 * time.Millisecond)
	}
	if nop != nil {
		nop.Store(0)
	} else {
		benchPurge(b, br, queues, benchWebhooks)
	}

	total := benchEvents * benchWebhooks
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
	for messages() < total { // the deliveries Run makes
		time.Sleep(2 * time.Millisecond)
	}
	rate := float64(total) / time.Since(start).Seconds()
	if nop == nil {
		benchPurge(b, br, queues, total)
	}
	return rate
}

// nopDest serves amqp URLs by counting its Sends: the engine with a destination that costs nothing.
type nopDest struct {
	webhooks.Destination // Schemes and Check
	sent                 *atomic.Int64
}

func (n *nopDest) Send(context.Context, *webhooks.Message) error {
	n.sent.Add(1)
	return nil
}

// total is the number of messages in queues.
func (b *broker) total(queues []string) int {
	n := 0
	for _, q := range queues {
		n += b.count(q)
	}
	return n
}

// benchPurge empties the queues, which hold want messages.
func benchPurge(b *testing.B, br *broker, queues []string, want int) {
	require.Equal(b, want, br.total(queues), "messages in the queues")
	for _, q := range queues {
		require.NoError(b, br.channel(func(ch *amqp.Channel) error { _, err := ch.QueuePurge(q, false); return err }))
	}
}

// benchDeleteKeys deletes the round's Redis keys.
func benchDeleteKeys(b *testing.B, rdb *redis.Client, prefix string) {
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, "*"+prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 1000 {
			require.NoError(b, rdb.Unlink(ctx, keys...).Err())
			keys = keys[:0]
		}
	}
	require.NoError(b, iter.Err())
	if len(keys) > 0 {
		require.NoError(b, rdb.Unlink(ctx, keys...).Err())
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
