package kafkadest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/internal/testproxy"
	"github.com/smartdrop/webhooks/kafkadest"
)

// cluster is an in-process Kafka (kfake) of a test's own, with an admin client.
type cluster struct {
	kf    *kfake.Cluster
	kc    *kgo.Client
	admin *kadm.Client
	auth  []kgo.Opt // the test clients' credentials, when the cluster has SASL on
	// proxies front the brokers when the cluster was made with newProxiedCluster: the brokers
	// advertise the proxies' addresses, so every connection, seed or not, goes through them.
	proxies []*testproxy.Proxy
}

// newCluster starts a kfake cluster, closed when t ends.
func newCluster(t testing.TB, opts ...kfake.Opt) *cluster {
	t.Helper()
	return newClusterAs(t, nil, opts...)
}

// newClusterAs is newCluster whose test clients connect with auth.
func newClusterAs(t testing.TB, auth []kgo.Opt, opts ...kfake.Opt) *cluster {
	t.Helper()
	kf, err := kfake.NewCluster(opts...)
	require.NoError(t, err)
	kc, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(kf.ListenAddrs()...)}, auth...)...)
	require.NoError(t, err)
	c := &cluster{kf: kf, kc: kc, admin: kadm.NewClient(kc), auth: auth}
	t.Cleanup(func() {
		kc.Close()
		kf.Close()
		for _, p := range c.proxies {
			_ = p.Close()
		}
	})
	return c
}

// newProxiedCluster is newCluster whose brokers each sit behind a testproxy: the listener a broker
// gets says the proxy's address is its own, so the metadata advertises the proxy.
func newProxiedCluster(t testing.TB, opts ...kfake.Opt) *cluster {
	t.Helper()
	var proxies []*testproxy.Proxy
	listen := proxiedListen(&proxies)
	c := newCluster(t, append(opts, kfake.ListenFn(listen))...)
	c.proxies = proxies
	return c
}

// proxiedListen is a kfake.ListenFn whose brokers each sit behind a testproxy it appends to proxies:
// the listener says the proxy's address is its own, so the metadata advertises the proxy.
func proxiedListen(proxies *[]*testproxy.Proxy) func(network, address string) (net.Listener, error) {
	return func(network, address string) (net.Listener, error) {
		ln, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		p, err := testproxy.Start(ln.Addr().String())
		if err != nil {
			_ = ln.Close()
			return nil, err
		}
		*proxies = append(*proxies, p)
		addr, err := net.ResolveTCPAddr("tcp", p.Addr())
		if err != nil {
			return nil, err
		}
		return proxiedListener{Listener: ln, addr: addr}, nil
	}
}

type proxiedListener struct {
	net.Listener
	addr net.Addr
}

func (l proxiedListener) Addr() net.Addr { return l.addr }

// addrs are the seed brokers' addresses (the proxies' when proxied).
func (c *cluster) addrs() []string { return c.kf.ListenAddrs() }

// url is the kafka:// URL of topic on this cluster.
func (c *cluster) url(topic string) string {
	return "kafka://" + strings.Join(c.addrs(), ",") + "/" + topic
}

var nonWord = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// topicName is a topic name of t's own.
func topicName(t testing.TB) string {
	name := strings.Trim(nonWord.ReplaceAllString(t.Name(), "-"), "-")
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	return "wh-" + name + "-" + randomHex(3)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// createTopic creates a topic of t's own with partitions partitions and returns its name.
func (c *cluster) createTopic(t testing.TB, partitions int32) string {
	t.Helper()
	name := topicName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.admin.CreateTopic(ctx, partitions, 1, nil, name)
	require.NoError(t, err)
	require.NoError(t, res.Err)
	return name
}

// count is the number of records topic holds: the sum of its partitions' end offsets (nothing is
// ever deleted from a test's topic, and no transaction writes control records to it).
func (c *cluster) count(t testing.TB, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := c.admin.ListEndOffsets(ctx, topic)
	require.NoError(t, err)
	require.NoError(t, offs.Error())
	var n int64
	offs.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

// topicExists reports whether the cluster has topic.
func (c *cluster) topicExists(t testing.TB, topic string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics, err := c.admin.ListTopics(ctx)
	require.NoError(t, err)
	return topics.Has(topic)
}

// records reads every record of topic from its start, once n have arrived or within 30 s; a
// test that needs all of them compares with count first.
func (c *cluster) records(t testing.TB, topic string, n int) []*kgo.Record {
	t.Helper()
	kc, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, c.auth...)...)
	require.NoError(t, err)
	defer kc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n && ctx.Err() == nil {
		fs := kc.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// headerOf rebuilds a record's headers as the http.Header an HTTP receiver would get.
func headerOf(r *kgo.Record) http.Header {
	h := http.Header{}
	for _, rh := range r.Headers {
		h.Add(rh.Key, string(rh.Value))
	}
	return h
}

// newRedis is a miniredis of t's own and a client of it.
func newRedis(t testing.TB) (*miniredis.Miniredis, redis.UniversalClient) {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return mr, rdb
}

// newDestination is a kafkadest.Destination closed when t ends.
func newDestination(t testing.TB, opts kafkadest.Options) *kafkadest.Destination {
	t.Helper()
	d, err := kafkadest.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

// newDispatcher is a Dispatcher on rdb under prefix sending kafka:// webhooks through kd, with the
// egress guard letting loopback through (kfake listens on 127.0.0.1) unless opts says otherwise.
func newDispatcher(t testing.TB, rdb redis.UniversalClient, prefix string, kd webhooks.Destination, opts webhooks.Options) *webhooks.Dispatcher {
	t.Helper()
	opts.KeyPrefix = prefix
	opts.Destinations = []webhooks.Destination{kd}
	if opts.AllowedNetworks == nil && !opts.AllowPrivateNetworks {
		opts.AllowPrivateNetworks = true
	}
	d, err := webhooks.New(rdb, opts)
	require.NoError(t, err)
	return d
}

// runWorker runs d's worker until t ends.
func runWorker(t testing.TB, d *webhooks.Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// waitDelivered waits until every delivery of ids has succeeded, as long as some delivery succeeds
// within each minute (progress, not wall time), and fails t with the stragglers' last errors
// otherwise.
func waitDelivered(t testing.TB, d *webhooks.Dispatcher, ids []string) {
	t.Helper()
	ctx := context.Background()
	left := map[string]bool{}
	for _, id := range ids {
		left[id] = true
	}
	last, progress := len(left), time.Now()
	for len(left) > 0 {
		for id := range left {
			dl, err := d.Deliveries().Get(ctx, id)
			require.NoError(t, err)
			switch dl.Status {
			case webhooks.StatusSuccess:
				delete(left, id)
			case webhooks.StatusFailed:
				t.Fatalf("delivery %s failed for good: %s", id, dl.LastError)
			}
		}
		if len(left) < last {
			last, progress = len(left), time.Now()
		}
		if time.Since(progress) > time.Minute {
			for id := range left {
				dl, _ := d.Deliveries().Get(ctx, id)
				t.Errorf("delivery %s still %s: %s", id, dl.Status, dl.LastError)
			}
			t.FailNow()
		}
		if len(left) > 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
}
