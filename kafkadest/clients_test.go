package kafkadest_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/destination/destinationtest"
	"github.com/smartdrop/webhooks/internal/testproxy"
	"github.com/smartdrop/webhooks/kafkadest"
)

// dialLog is a Message.Dial that records the connections it opens, by address, and which are
// closed.
type dialLog struct {
	mu     sync.Mutex
	opened map[string]int
	conns  []*loggedConn
}

type loggedConn struct {
	net.Conn
	addr   string
	mu     sync.Mutex
	closed bool
}

func (c *loggedConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return c.Conn.Close()
}

func newDialLog() *dialLog { return &dialLog{opened: map[string]int{}} }

func (l *dialLog) dial(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	lc := &loggedConn{Conn: c, addr: address}
	l.mu.Lock()
	l.opened[address]++
	l.conns = append(l.conns, lc)
	l.mu.Unlock()
	return lc, nil
}

// dials is the number of connections opened to any of addrs.
func (l *dialLog) dials(addrs []string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range addrs {
		n += l.opened[a]
	}
	return n
}

// open is the number of connections to any of addrs not closed.
func (l *dialLog) open(addrs []string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.conns {
		c.mu.Lock()
		if !c.closed && contains(addrs, c.addr) {
			n++
		}
		c.mu.Unlock()
	}
	return n
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// send sends one message to raw through d with dial, within 10 s.
func send(t testing.TB, d destination.Destination, raw, id string, dial func(context.Context, string, string) (net.Conn, error)) error {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	m := destinationtest.Message(u, id, []byte(`{"id":"`+id+`"}`))
	m.Dial = dial
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return d.Send(ctx, m)
}

// TestOneClientPerBrokersAndCredentials: the topics of one cluster share one client, whatever the
// order of the seed list — one idempotent producer session, one producer id asked of the brokers —
// and other credentials get a client of their own.
func TestOneClientPerBrokersAndCredentials(t *testing.T) {
	t.Parallel()
	auth := []kgo.Opt{kgo.SASL(scram.Auth{User: "u1", Pass: "p1"}.AsSha512Mechanism())}
	c := newClusterAs(t, auth, kfake.NumBrokers(2), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "u1", "p1"), kfake.Superuser("SCRAM-SHA-512", "u2", "p2"))
	a, b := c.createTopic(t, 2), c.createTopic(t, 2)
	var sessions atomic.Int64
	c.kf.ControlKey(int16(kmsg.InitProducerID), func(kmsg.Request) (kmsg.Response, error, bool) {
		sessions.Add(1)
		return nil, nil, false
	})
	kd := newDestination(t, kafkadest.Options{})
	log := newDialLog()
	as := func(user, pass string, seeds []string, topic string) string {
		return "kafka://" + user + ":" + pass + "@" + strings.Join(seeds, ",") + "/" + topic
	}
	seeds := c.addrs()
	reversed := []string{seeds[1], seeds[0]}
	require.NoError(t, send(t, kd, as("u1", "p1", seeds, a), "m1", log.dial))
	require.NoError(t, send(t, kd, as("u1", "p1", seeds, b), "m2", log.dial))
	require.NoError(t, send(t, kd, as("u1", "p1", reversed, a), "m3", log.dial))
	assert.EqualValues(t, 1, sessions.Load(), "one client for the cluster's topics")
	require.NoError(t, send(t, kd, as("u2", "p2", seeds, a), "m4", log.dial))
	assert.EqualValues(t, 2, sessions.Load(), "other credentials, another client")
	assert.EqualValues(t, 3, c.count(t, a))
}

// TestMaxClientsClosesTheLeastRecentlyUsed: with MaxClients 1, a send to a second cluster closes
// the first cluster's client (its connections); a send to the first opens it again.
func TestMaxClientsClosesTheLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	ca, cb := newCluster(t, kfake.NumBrokers(1)), newCluster(t, kfake.NumBrokers(1))
	ta, tb := ca.createTopic(t, 1), cb.createTopic(t, 1)
	kd := newDestination(t, kafkadest.Options{MaxClients: 1})
	log := newDialLog()
	require.NoError(t, send(t, kd, ca.url(ta), "m1", log.dial))
	require.Positive(t, log.open(ca.addrs()))
	require.NoError(t, send(t, kd, cb.url(tb), "m2", log.dial))
	assert.Zero(t, log.open(ca.addrs()), "the first cluster's client was closed")
	before := log.dials(ca.addrs())
	require.NoError(t, send(t, kd, ca.url(ta), "m3", log.dial))
	assert.Greater(t, log.dials(ca.addrs()), before, "opened again")
	assert.Zero(t, log.open(cb.addrs()), "and the second one closed")
	assert.EqualValues(t, 2, ca.count(t, ta))
}

// TestMaxClientsAllBusy: with MaxClients 1 and the one client holding a produce still unanswered
// (its attempt ended, the broker unreachable), a send to another cluster fails at once, in words
// naming the option, as a refusal the breaker does not count.
func TestMaxClientsAllBusy(t *testing.T) {
	t.Parallel()
	ca, cb := newProxiedCluster(t, kfake.NumBrokers(1)), newCluster(t, kfake.NumBrokers(1))
	ta, tb := ca.createTopic(t, 1), cb.createTopic(t, 1)
	kd := newDestination(t, kafkadest.Options{MaxClients: 1})
	log := newDialLog()
	require.NoError(t, send(t, kd, ca.url(ta), "m1", log.dial))
	ca.onProduce(func(int) bool { ca.proxiesDown(); return true })
	u, err := url.Parse(ca.url(ta))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	m := destinationtest.Message(u, "m2", []byte(`{}`))
	m.Dial = log.dial
	require.Error(t, kd.Send(ctx, m))
	cancel()
	err = send(t, kd, cb.url(tb), "m3", log.dial)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "every one of the destination's 1 Kafka clients (kafkadest Options.MaxClients) has a message in flight")
	kind, _ := destination.Classify(err)
	assert.Equal(t, destination.Rejected, kind)
}

// TestIdleClientsAreClosed: a client no Send used for IdleTimeout is closed at the next Send that
// looks for a client.
func TestIdleClientsAreClosed(t *testing.T) {
	t.Parallel()
	ca, cb := newCluster(t, kfake.NumBrokers(1)), newCluster(t, kfake.NumBrokers(1))
	ta, tb := ca.createTopic(t, 1), cb.createTopic(t, 1)
	kd := newDestination(t, kafkadest.Options{IdleTimeout: time.Second})
	log := newDialLog()
	require.NoError(t, send(t, kd, ca.url(ta), "m1", log.dial))
	require.NoError(t, send(t, kd, cb.url(tb), "m2", log.dial))
	require.Positive(t, log.open(ca.addrs()), "not idle yet")
	time.Sleep(1100 * time.Millisecond)
	require.NoError(t, send(t, kd, cb.url(tb), "m3", log.dial))
	assert.Zero(t, log.open(ca.addrs()), "the idle client was closed")
	assert.Positive(t, log.open(cb.addrs()), "the one in use was kept")
}

// TestCloseEndsEverything: Close closes every client's connections, and every goroutine of the
// clients ends (franz-go's Close returns before the last connection goroutine has: CI saw one still
// exiting), also with a produce still unanswered (the brokers unreachable); a Send after it fails in
// words. Not parallel: it looks at every goroutine of the process.
func TestCloseEndsEverything(t *testing.T) {
	var proxies []*testproxy.Proxy
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"), kfake.ListenFn(proxiedListen(&proxies)))
	require.NoError(t, err)
	t.Cleanup(func() {
		kf.Close()
		for _, p := range proxies {
			_ = p.Close()
		}
	})
	kd, err := kafkadest.New(kafkadest.Options{})
	require.NoError(t, err)
	log := newDialLog()
	raw := "kafka://" + kf.ListenAddrs()[0] + "/orders"
	require.NoError(t, send(t, kd, raw, "m1", log.dial))
	// A produce left unanswered: the broker gets it, and its proxy goes down before the answer.
	kf.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		proxies[0].Down()
		return nil, errors.New("dropped by the test"), true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	m := destinationtest.Message(u, "m2", []byte(`{}`))
	m.Dial = log.dial
	assert.Error(t, kd.Send(ctx, m))
	cancel()
	require.Positive(t, kafkaGoroutines(), "the client runs goroutines")

	require.NoError(t, kd.Close())
	assert.Zero(t, log.open(kf.ListenAddrs()), "every connection closed")
	// A leak stays: wait up to 10 s for the exiting ones.
	for i := 0; i < 1000 && kafkaGoroutines() > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	stacks := kafkaStacks()
	assert.Empty(t, stacks, "no client goroutine outlives the closed client")
	err = send(t, kd, raw, "m3", log.dial)
	require.Error(t, err)
	assert.Equal(t, "the Kafka destination is closed", err.Error())
	require.NoError(t, kd.Close(), "a second Close is harmless")
}

// kafkaGoroutines counts the goroutines running the Kafka client's code (kgo), none of which the
// in-process broker runs.
func kafkaGoroutines() int {
	return strings.Count(kafkaStacks(), "\n\n") + boolInt(kafkaStacks() != "")
}

// kafkaStacks are the stacks of the goroutines running kgo's code.
func kafkaStacks() string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/twmb/franz-go/pkg/kgo.") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
