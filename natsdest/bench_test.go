package natsdest_test

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
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/natsdest"
)

// The workload of BenchmarkDeliveries (BENCHMARKS.md's end-to-end workload).
const (
	benchEvents   = 5000
	benchWebhooks = 4
	benchCallers  = 64
	benchPayload  = 512
)

// BenchmarkDeliveries measures deliveries/s end to end through the Dispatcher to NATS JetStream (5,000
// events × 4 webhooks, 64 callers calling Dispatch, which makes each first attempt inline; a worker
// Run of the same Dispatcher takes what Dispatch leaves it), until the streams hold every message,
// against the broker's own rate with the same client and acks: 64 goroutines publishing 20,000
// messages with Nats-Msg-Id through one nats.go connection, each waiting for its PubAck (the limit).
// Each b.N round runs both, alternating which goes first; it reports the medians and the median of
// the rounds' ratios. Redis: WEBHOOKS_REDIS_ADDR, else miniredis (in-process: figures of the engine on
// miniredis, not of a deployment). It reports the CPU each message cost in this process, in
// redis-server (INFO cpu; -1 on miniredis, which runs in this process) and in nats-server (/proc;
// -1 where not found), medians of the rounds: on a machine of 2 cores, which the three share, the
// rates follow these sums.
//
//	WEBHOOKS_NATS_URL=nats://127.0.0.1:4222 WEBHOOKS_REDIS_ADDR=127.0.0.1:6379 go test -run '^$' -bench Deliveries -benchtime 5x
func BenchmarkDeliveries(b *testing.B) {
	br := newBroker(b)
	ctx := context.Background()
	rdb, prefix := benchRedis(b)
	nd := newDest(b, natsdest.Options{})
	d, err := webhooks.New(rdb, webhooks.Options{KeyPrefix: prefix, AllowPrivateNetworks: true, Destinations: []webhooks.Destination{nd, nullDest{}}})
	require.NoError(b, err)
	base := "bench." + strings.ToLower(unique(b))
	var subjects [2][]string // the webhooks', the raw publishes'
	for w := range benchWebhooks {
		subjects[0] = append(subjects[0], fmt.Sprintf("%s.w%d", base, w))
		subjects[1] = append(subjects[1], fmt.Sprintf("%s.p%d", base, w))
		_, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: br.target(subjects[0][w], "").String(), Events: []string{"order.*"}})
		require.NoError(b, err)
		_, err = d.Webhooks().Create(ctx, webhooks.Webhook{URL: fmt.Sprintf("null://sink.example/w%d", w), Events: []string{"null.*"}})
		require.NoError(b, err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var worker sync.WaitGroup
	worker.Go(func() { _ = d.Run(runCtx) })
	defer func() { stop(); worker.Wait() }()
	data := map[string]string{"pad": strings.Repeat("x", benchPayload-64)}

	brokerPID := natsServerPID()
	var dispatched, published, engine, ratios []float64
	var cpu [3][3][]float64 // per system, per process (this one, Redis, NATS): µs per message, by round
	b.ResetTimer()
	for round := range b.N {
		var rates [3]float64
		for i := range 3 {
			system := (round + i) % 3 // rotated: which system goes first
			before := readCPU(ctx, rdb, brokerPID)
			if system == 2 {
				rates[2] = benchDispatch(b, d, "null.paid", nil, round, data)
			} else {
				name := fmt.Sprintf("BENCH_%s_%d_%d", strings.ToUpper(unique(b)), round, system)
				stream := benchStream(b, br, name, subjects[system])
				if system == 0 {
					rates[0] = benchDispatch(b, d, "order.paid", stream, round, data)
				} else {
					rates[1] = benchPublish(b, br, stream, subjects[1], round)
				}
				require.NoError(b, br.js.DeleteStream(ctx, name))
			}
			for p, us := range readCPU(ctx, rdb, brokerPID).since(before, benchEvents*benchWebhooks) {
				cpu[system][p] = append(cpu[system][p], us)
			}
		}
		dispatched, published, engine = append(dispatched, rates[0]), append(published, rates[1]), append(engine, rates[2])
		ratios = append(ratios, rates[0]/rates[1])
		b.Logf("round %d: %.0f deliveries/s to NATS, %.0f publishes/s, ratio %.2f; %.0f deliveries/s to a destination that does nothing",
			round, rates[0], rates[1], rates[0]/rates[1], rates[2])
	}
	b.StopTimer()
	b.ReportMetric(median(dispatched), "deliveries/s")
	b.ReportMetric(median(published), "publishes/s")
	b.ReportMetric(median(ratios), "ratio")
	b.ReportMetric(median(engine), "null-deliveries/s")
	// The CPU each message cost, by process (-1: not measured); on 2 cores the rates follow their sums.
	for system, name := range []string{"delivery", "publish", "null-delivery"} {
		for p, proc := range []string{"proc", "redis", "nats"} {
			b.ReportMetric(median(cpu[system][p]), proc+"-µs/"+name)
		}
	}
	b.ReportMetric(0, "ns/op")
}

// benchRedis is the benchmark's Redis: WEBHOOKS_REDIS_ADDR (its keys of a prefix of its own
// deleted at the end) or miniredis.
func benchRedis(b *testing.B) (redis.UniversalClient, string) {
	prefix := "ntb_" + unique(b)
	addr := os.Getenv("WEBHOOKS_REDIS_ADDR")
	if addr == "" {
		addr = miniredis.RunT(b).Addr()
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 2 * benchCallers})
	b.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, "*"+prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		_ = rdb.Close()
	})
	return rdb, prefix
}

// benchStream makes a stream taking subjects.
func benchStream(b *testing.B, br *broker, name string, subjects []string) jetstream.Stream {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := createStream(ctx, b, br.js, jetstream.StreamConfig{Name: name, Subjects: subjects, Duplicates: dedupWindow})
	require.NoError(b, err)
	return s
}

// benchDispatch dispatches the round's events of type typ from benchCallers goroutines and returns
// deliveries/s until the stream holds them all (nil: until every Dispatch has returned, each first
// attempt made inline).
func benchDispatch(b *testing.B, d *webhooks.Dispatcher, typ string, stream jetstream.Stream, round int, data any) float64 {
	ctx := context.Background()
	start := time.Now()
	fanOut(b, benchEvents, func(n int) error {
		res, err := d.Dispatch(ctx, webhooks.Event{Type: typ, ID: fmt.Sprintf("%s_r%d_e%d", typ, round, n), Data: data})
		if err == nil && len(res) != benchWebhooks {
			err = fmt.Errorf("%d results", len(res))
		}
		return err
	})
	if stream != nil {
		waitStream(b, stream, benchEvents*benchWebhooks)
	}
	return float64(benchEvents*benchWebhooks) / time.Since(start).Seconds()
}

// nullDest is a destination that takes every message at once: the engine's own rate.
type nullDest struct{}

func (nullDest) Schemes() []string    { return []string{"null"} }
func (nullDest) Check(*url.URL) error { return nil }
func (nullDest) Send(_ context.Context, m *destination.Message) error {
	m.Response = "taken"
	return nil
}

// benchPublish publishes benchEvents×benchWebhooks messages of benchPayload bytes with Nats-Msg-Id
// from benchCallers goroutines through one connection, each waiting for its PubAck, and returns
// publishes/s.
func benchPublish(b *testing.B, br *broker, stream jetstream.Stream, subjects []string, round int) float64 {
	nc, err := nats.Connect(br.url.String())
	require.NoError(b, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(b, err)
	body := []byte(strings.Repeat("x", benchPayload))
	ctx := context.Background()
	start := time.Now()
	fanOut(b, benchEvents*benchWebhooks, func(n int) error {
		msg := &nats.Msg{Subject: subjects[n%benchWebhooks], Data: body, Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("r%d_m%d", round, n))
		_, err := js.PublishMsg(ctx, msg)
		return err
	})
	waitStream(b, stream, benchEvents*benchWebhooks)
	return float64(benchEvents*benchWebhooks) / time.Since(start).Seconds()
}

// fanOut calls f(0) … f(n-1) from benchCallers goroutines, until one fails (b fails then).
func fanOut(b *testing.B, n int, f func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range benchCallers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := f(i); err != nil {
					b.Errorf("%d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// waitStream waits until stream holds n messages (bounded: a minute without progress fails).
func waitStream(b *testing.B, stream jetstream.Stream, n uint64) {
	ctx := context.Background()
	var last uint64
	lastAt := time.Now()
	for {
		info, err := stream.Info(ctx)
		require.NoError(b, err)
		if info.State.Msgs >= n {
			return
		}
		if info.State.Msgs > last {
			last, lastAt = info.State.Msgs, time.Now()
		} else if time.Since(lastAt) > time.Minute {
			b.Fatalf("the stream holds %d of %d messages, none more in a minute", last, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
