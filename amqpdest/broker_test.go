package amqpdest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/amqpdest"
	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/destination/destinationtest"
)

// brokerURL is the machine's RabbitMQ (WEBHOOKS_AMQP_URL): the test is skipped without it, and fails
// under CI without it.
func brokerURL(t testing.TB) *url.URL {
	t.Helper()
	raw := os.Getenv("WEBHOOKS_AMQP_URL")
	if raw == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("WEBHOOKS_AMQP_URL is not set: CI runs the AMQP tests against RabbitMQ (amqp://guest:guest@127.0.0.1:5672/)")
		}
		t.Skip("WEBHOOKS_AMQP_URL is not set: set it to a RabbitMQ, e.g. amqp://guest:guest@127.0.0.1:5672/")
	}
	u, err := url.Parse(raw)
	require.NoError(t, err, "WEBHOOKS_AMQP_URL")
	return u
}

// broker is a test's own administration connection to the machine's RabbitMQ: it declares the
// queues and exchanges the test sends to, reads the queues, and deletes what it declared when the
// test ends.
type broker struct {
	t    testing.TB
	url  *url.URL
	conn *amqp.Connection
	mu   sync.Mutex
	ch   *amqp.Channel
}

func newBroker(t testing.TB) *broker {
	u := brokerURL(t)
	conn, err := amqp.Dial(u.String())
	require.NoError(t, err, "connecting to WEBHOOKS_AMQP_URL")
	ch, err := conn.Channel()
	require.NoError(t, err)
	b := &broker{t: t, url: u, conn: conn, ch: ch}
	t.Cleanup(func() { _ = conn.Close() })
	return b
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// name is a new name, unique to this run of the test, for a queue or an exchange.
func (b *broker) name(what string) string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	n := unsafeName.ReplaceAllString(b.t.Name(), "-")
	if len(n) > 80 {
		n = n[len(n)-80:]
	}
	return "amqpdest-test." + n + "." + what + "." + hex.EncodeToString(r[:])
}

// channel runs f on the admin channel, opening a new one when a failed call closed it.
func (b *broker) channel(f func(ch *amqp.Channel) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch.IsClosed() {
		ch, err := b.conn.Channel()
		if err != nil {
			return err
		}
		b.ch = ch
	}
	return f(b.ch)
}

// queue declares a new queue, deleted when the test ends.
func (b *broker) queue(what string) string {
	q := b.name(what)
	require.NoError(b.t, b.channel(func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(q, true, false, false, false, nil)
		return err
	}))
	b.t.Cleanup(func() {
		_ = b.channel(func(ch *amqp.Channel) error { _, err := ch.QueueDelete(q, false, false, false); return err })
	})
	return q
}

// exchange declares a new exchange of kind, deleted when the test ends.
func (b *broker) exchange(what, kind string) string {
	x := b.name(what)
	require.NoError(b.t, b.channel(func(ch *amqp.Channel) error { return ch.ExchangeDeclare(x, kind, true, false, false, false, nil) }))
	b.t.Cleanup(func() {
		_ = b.channel(func(ch *amqp.Channel) error { return ch.ExchangeDelete(x, false, false) })
	})
	return x
}

// topic declares a topic exchange and a queue bound to it with pattern, deleted when the test ends.
func (b *broker) topic(what, pattern string) (exchange, queue string) {
	x, q := b.exchange(what, "topic"), b.queue(what)
	b.bind(q, pattern, x)
	return x, q
}

// bind binds queue q to exchange x with key.
func (b *broker) bind(q, key, x string) {
	require.NoError(b.t, b.channel(func(ch *amqp.Channel) error { return ch.QueueBind(q, key, x, false, nil) }))
}

// count is the number of messages in q.
func (b *broker) count(q string) int {
	var n int
	require.NoError(b.t, b.channel(func(ch *amqp.Channel) error {
		qi, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
		n = qi.Messages
		return err
	}))
	return n
}

// get takes the message at the head of q, if any.
func (b *broker) get(q string) (amqp.Delivery, bool) {
	var m amqp.Delivery
	var ok bool
	require.NoError(b.t, b.channel(func(ch *amqp.Channel) error {
		var err error
		m, ok, err = ch.Get(q, true)
		return err
	}))
	return m, ok
}

// take takes the messages in q, in queue order, until n are taken or ctx ends.
func (b *broker) take(ctx context.Context, q string, n int) []amqp.Delivery {
	var out []amqp.Delivery
	for len(out) < n {
		if m, ok := b.get(q); ok {
			out = append(out, m)
			continue
		}
		select {
		case <-ctx.Done():
			return out
		case <-time.After(10 * time.Millisecond):
		}
	}
	return out
}

// drain takes every message in q now: it ends at the first empty read.
func (b *broker) drain(q string) []amqp.Delivery {
	var out []amqp.Delivery
	for {
		m, ok := b.get(q)
		if !ok {
			return out
		}
		out = append(out, m)
	}
}

// target is the URL of the machine's broker with query q (exchange, routing_key).
func (b *broker) target(q url.Values) *url.URL {
	u := *b.url
	u.RawQuery = q.Encode()
	return &u
}

// header is a message's AMQP headers as an http.Header, as a consumer rebuilds it to verify it.
func header(m amqp.Delivery) http.Header {
	h := http.Header{}
	for k, v := range m.Headers {
		h.Set(k, fmt.Sprint(v))
	}
	return h
}

// freeAddr is a loopback address on which nothing listens.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// newDestination is a Destination closed when the test ends.
func newDestination(t testing.TB, o amqpdest.Options) *amqpdest.Destination {
	d, err := amqpdest.New(o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

// TestConformance runs the destination conformance suite against the machine's RabbitMQ: each
// target is a queue of its own on the default exchange (routing_key = the queue's name).
func TestConformance(t *testing.T) {
	b := newBroker(t)
	var queues sync.Map // URL -> queue
	destinationtest.Run(t, destinationtest.Harness{
		New: func(t *testing.T) destination.Destination {
			d, err := amqpdest.New(amqpdest.Options{})
			require.NoError(t, err)
			return d
		},
		Target: func(t *testing.T) *url.URL {
			q := b.queue("conformance")
			u := b.target(url.Values{"routing_key": {q}})
			queues.Store(u.String(), q)
			return u
		},
		Receive: func(ctx context.Context, t *testing.T, u *url.URL, n int) []destinationtest.Received {
			q, ok := queues.Load(u.String())
			require.True(t, ok, "not a target of this test: %s", u.Redacted())
			var out []destinationtest.Received
			for _, m := range b.take(ctx, q.(string), n) {
				out = append(out, destinationtest.Received{ID: m.MessageId, Header: header(m), Body: m.Body})
			}
			return out
		},
		Missing: func(t *testing.T) *url.URL {
			return b.target(url.Values{"routing_key": {b.name("no-such-queue")}})
		},
		Unreachable: func(t *testing.T) *url.URL {
			return &url.URL{Scheme: "amqp", User: url.UserPassword("guest", "s3cret-unreachable"), Host: freeAddr(t), Path: "/"}
		},
		Invalid: []string{
			"amqp:///",
			"amqp://broker.example/?certfile=/etc/passwd",
			"amqp://broker.example/?heartbeat=0",
			"amqp://broker.example/?exchange=a%20b",
			"amqp://broker.example/?exchange=x&exchange=y",
			"amqp://broker.example:99999/",
			"amqp://a.example,b.example/",
			"amqp://broker.example/#frag",
			"amqp://broker.example/?routing_key=" + strings.Repeat("k", 256),
		},
	})
}
