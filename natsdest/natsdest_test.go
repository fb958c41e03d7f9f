package natsdest_test

import (
	"context"
	"net"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/destination/destinationtest"
	"github.com/smartdrop/webhooks/natsdest"
)

// TestCheck: Check takes a URL that names one subject, and refuses what it cannot publish to in
// words that say what to change.
func TestCheck(t *testing.T) {
	t.Parallel()
	d, err := natsdest.New(natsdest.Options{})
	require.NoError(t, err)
	for _, tc := range []struct {
		url, words string // words "" for a URL Check takes
	}{
		{"nats://broker.example:4222/orders.paid", ""},
		{"nats://tenant:secret@broker.example:4222/orders.paid", ""},
		{"nats://token@broker.example/orders", ""},
		{"nats://a.example:4222,b.example:4222/orders.paid", ""},
		{"tls://broker.example:4222/orders.paid", ""},
		{"nats://broker.example:4222/orders/paid", ""},
		{"nats://broker.example:4222", "names the subject to publish to as its path: nats://broker.example:4222/orders.paid"},
		{"nats://broker.example:4222/", "names the subject to publish to as its path"},
		{"nats://broker.example/orders.*", `has the wildcard "*"`},
		{"nats://broker.example/orders.>", `has the wildcard ">"`},
		{"nats://broker.example/orders..paid", "has an empty token"},
		{"nats://broker.example/orders.", "has an empty token"},
		{"nats://broker.example/orders%20paid", "has a space or a control character at byte 6"},
		{"nats://broker.example/orders%0Apaid", "has a space or a control character"},
		{"nats://broker.example/$JS.API.STREAM.LIST", "starts with $JS., which NATS reserves"},
		{"nats://broker.example/$SYS.REQ.SERVER.PING", "starts with $SYS."},
		{"nats://broker.example/_INBOX.abc", "starts with _INBOX."},
		{"nats://broker.example/orders?stream=ORDERS", "a NATS URL takes no query"},
		{"nats://broker.example/orders?", "a NATS URL takes no query"},
		{"nats://broker.example/orders#frag", "takes no fragment"},
		{"nats://broker.example/" + strings.Repeat("a", 1025), "longer than 1024 bytes"},
	} {
		u, err := url.Parse(tc.url)
		require.NoError(t, err, tc.url)
		err = d.Check(u)
		if tc.words == "" {
			assert.NoError(t, err, tc.url)
			continue
		}
		if assert.Error(t, err, tc.url) {
			assert.Contains(t, err.Error(), tc.words, tc.url)
			assert.NotContains(t, err.Error(), "secret")
		}
	}
}

// TestNewRefusesOptionsOutOfBounds: New refuses each option out of its bounds, naming it.
func TestNewRefusesOptionsOutOfBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts natsdest.Options
	}{
		{"ConnectTimeout", natsdest.Options{ConnectTimeout: -time.Second}},
		{"ConnectTimeout", natsdest.Options{ConnectTimeout: 2 * time.Minute}},
		{"IdleTimeout", natsdest.Options{IdleTimeout: time.Millisecond}},
		{"IdleTimeout", natsdest.Options{IdleTimeout: 25 * time.Hour}},
		{"MaxConnections", natsdest.Options{MaxConnections: -1}},
		{"MaxConnections", natsdest.Options{MaxConnections: 100_001}},
		{"ReconnectWait", natsdest.Options{ReconnectWait: -1}},
		{"ReconnectWait", natsdest.Options{ReconnectWait: time.Hour}},
	} {
		_, err := natsdest.New(tc.opts)
		require.ErrorIs(t, err, natsdest.ErrInvalidOptions, tc.name)
		assert.Contains(t, err.Error(), tc.name)
	}
	d, err := natsdest.New(natsdest.Options{})
	require.NoError(t, err)
	require.NoError(t, d.Close())
}

// TestJetStreamHeadersRefused: a webhook's custom header named Nats-… (JetStream's own: a rollup
// purges the stream, a message id replaces the dedup key) fails the attempt for good, in words, and
// publishes nothing.
func TestJetStreamHeadersRefused(t *testing.T) {
	t.Parallel()
	b := newBroker(t)
	stream, subject := b.stream(t)
	d := newDest(t, natsdest.Options{})
	for _, name := range []string{"Nats-Rollup", "Nats-Msg-Id", "NATS-Expected-Stream", "nats-ttl"} {
		m := destinationtest.Message(b.target(subject, ""), "msg_"+name, []byte(`{}`))
		m.Header[name] = []string{"all"}
		err := d.Send(context.Background(), m)
		require.Error(t, err, name)
		kind, _ := destination.Classify(err)
		assert.Equal(t, destination.Permanent, kind, name)
		assert.Equal(t, "the header "+name+" is JetStream's own (Nats-…): remove it from the webhook's custom headers", err.Error())
	}
	m := destinationtest.Message(b.target(subject, ""), "msg_ok", []byte(`{}`))
	require.NoError(t, d.Send(context.Background(), m))
	assert.Regexp(t, `^stream `+stream+`, sequence 1$`, m.Response, "the receipt names the stream and the sequence")
	assert.EqualValues(t, 1, b.count(t, stream), "only the message without a JetStream header")
}

// countingDial is a Message.Dial that counts its dials and closes, and signals each close.
type countingDial struct {
	dials, closes atomic.Int32
	closed        chan struct{}
}

func newCountingDial() *countingDial { return &countingDial{closed: make(chan struct{}, 100)} }

func (c *countingDial) dial(ctx context.Context, network, address string) (net.Conn, error) {
	c.dials.Add(1)
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return &notifyConn{Conn: conn, c: c}, nil
}

type notifyConn struct {
	net.Conn
	c    *countingDial
	once sync.Once
}

func (n *notifyConn) Close() error {
	n.once.Do(func() {
		n.c.closes.Add(1)
		n.c.closed <- struct{}{}
	})
	return n.Conn.Close()
}

// TestOneConnectionPerServerAndCredentials: concurrent Sends to one server with one set of
// credentials share one connection; other credentials get one of their own.
func TestOneConnectionPerServerAndCredentials(t *testing.T) {
	t.Parallel()
	b := newBroker(t)
	stream, subject := b.stream(t)
	d := newDest(t, natsdest.Options{})
	cd := newCountingDial()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 8 {
				u := b.target(subject, "")
				if g%2 == 1 {
					u.User = url.UserPassword("other", "credentials") // the machine's NATS takes any
				}
				m := destinationtest.Message(u, "msg_"+string(rune('a'+g))+string(rune('a'+i)), []byte(`{}`))
				m.Dial = cd.dial
				assert.NoError(t, d.Send(context.Background(), m))
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 2, cd.dials.Load(), "one connection per (server, credentials)")
	assert.EqualValues(t, 128, b.count(t, stream))
}

// TestIdleConnectionClosed: a connection no Send used for IdleTimeout is closed, and the next Send
// connects again.
func TestIdleConnectionClosed(t *testing.T) {
	t.Parallel()
	b := newBroker(t)
	stream, subject := b.stream(t)
	d := newDest(t, natsdest.Options{IdleTimeout: time.Second})
	cd := newCountingDial()
	send := func(id string) {
		m := destinationtest.Message(b.target(subject, ""), id, []byte(`{}`))
		m.Dial = cd.dial
		require.NoError(t, d.Send(context.Background(), m))
	}
	send("msg_1")
	select {
	case <-cd.closed:
	case <-time.After(time.Minute):
		t.Fatal("the idle connection was not closed within a minute (IdleTimeout 1s)")
	}
	send("msg_2")
	assert.EqualValues(t, 2, cd.dials.Load(), "the next Send connected again")
	assert.EqualValues(t, 2, b.count(t, stream))
}

// TestSendReturnsWhileConnecting: a server that takes the TCP connection and never speaks holds no
// Send past its context, and Close ends the connect that goes on (the bounds are far from the
// durations they tell apart: 200ms or a minute).
func TestSendReturnsWhileConnecting(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	d, err := natsdest.New(natsdest.Options{ConnectTimeout: time.Minute})
	require.NoError(t, err)
	u := &url.URL{Scheme: "nats", Host: ln.Addr().String(), Path: "/orders"}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = d.Send(ctx, destinationtest.Message(u, "msg_1", []byte(`{}`)))
	require.Error(t, err)
	assert.Equal(t, "cannot connect to the NATS server at "+u.Host+": no answer within the timeout", err.Error())
	assert.Less(t, time.Since(start), 30*time.Second, "Send waited for the connect (a minute), not for its context (200ms)")
	start = time.Now()
	require.NoError(t, d.Close())
	assert.Less(t, time.Since(start), 30*time.Second, "Close waited for the connect's timeout (a minute) instead of ending it")
	err = d.Send(context.Background(), destinationtest.Message(u, "msg_2", []byte(`{}`)))
	assert.EqualError(t, err, "the NATS destination is closed")
}

// TestCloseLeavesNoGoroutine: Close drains and closes every connection, one of them reconnecting,
// and no goroutine of the client's is left. (Not parallel: it counts the process's goroutines.)
func TestCloseLeavesNoGoroutine(t *testing.T) {
	b := newBroker(t)
	_, subject := b.stream(t)
	proxy := startProxy(t, b)
	d, err := natsdest.New(natsdest.Options{ReconnectWait: 50 * time.Millisecond})
	require.NoError(t, err)
	for i, host := range []string{"", proxy.Addr()} {
		require.NoError(t, d.Send(context.Background(), destinationtest.Message(b.target(subject, host), "msg_"+string(rune('a'+i)), []byte(`{}`))))
	}
	proxy.Down() // the second connection reconnects, in vain
	b.nc.Close() // the test's own connection
	require.NoError(t, d.Close())
	var left []string
	for range 100 { // nats.go's read and flush loops end as their socket closes: let them run
		left = natsGoroutines()
		if len(left) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.Empty(t, left, "goroutines of the NATS client left after Close")
}

// natsGoroutines are the stacks of the goroutines running nats.go's or natsdest's code.
func natsGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "nats-io/nats.go") || strings.Contains(g, "webhooks/natsdest.") {
			out = append(out, g)
		}
	}
	return out
}

// TestFailureWords: what JetStream or the server answers, in the words and of the kind the README's
// table says.
func TestFailureWords(t *testing.T) {
	t.Parallel()
	b := newBroker(t)
	d := newDest(t, natsdest.Options{})
	ctx := context.Background()
	newStream := func(cfg jetstream.StreamConfig) string {
		cfg.Name, cfg.Subjects = "WH_"+strings.ToUpper(unique(t)), []string{"wh." + strings.ToLower(unique(t))}
		_, err := createStream(ctx, t, b.js, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.js.DeleteStream(context.Background(), cfg.Name) })
		return cfg.Subjects[0]
	}
	send := func(subject string, body []byte, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return d.Send(ctx, destinationtest.Message(b.target(subject, ""), "msg_"+unique(t), body))
	}
	check := func(err error, kind destination.Kind, words string) {
		t.Helper()
		require.Error(t, err)
		k, _ := destination.Classify(err)
		assert.Equal(t, kind, k, words)
		assert.Regexp(t, words, err.Error())
	}

	small := newStream(jetstream.StreamConfig{MaxMsgSize: 256})
	check(send(small, []byte(strings.Repeat("x", 512)), 10*time.Second), destination.Permanent,
		`^JetStream refused the message on subject "`+small+`": message size exceeds maximum allowed \(error code 10054\)$`)

	full := newStream(jetstream.StreamConfig{MaxMsgs: 1, Discard: jetstream.DiscardNew})
	require.NoError(t, send(full, []byte(`{}`), 10*time.Second))
	check(send(full, []byte(`{}`), 10*time.Second), destination.Unavailable,
		`^JetStream refused the message on subject "`+full+`": maximum messages exceeded \(error code \d+\)$`)

	check(send(small, make([]byte, 2<<20), 10*time.Second), destination.Permanent,
		`^the message \(\d+ bytes with its headers\) is larger than the max_payload of the NATS server at `+regexp.QuoteMeta(b.url.Host)+` \(\d+ bytes\)$`)

	silent := "wh.silent." + strings.ToLower(unique(t)) // a core subscriber that never answers: no stream, no "no responders"
	sub, err := b.nc.SubscribeSync(silent)
	require.NoError(t, err)
	defer sub.Unsubscribe()
	require.NoError(t, b.nc.Flush())
	check(send(silent, []byte(`{}`), 300*time.Millisecond), destination.Unavailable,
		`^JetStream did not acknowledge the message on subject "`+silent+`" within the timeout$`)

	service := "wh.service." + strings.ToLower(unique(t)) // a service that answers: not a stream
	svc, err := b.nc.Subscribe(service, func(m *nats.Msg) { _ = m.Respond([]byte("hello")) })
	require.NoError(t, err)
	defer svc.Unsubscribe()
	require.NoError(t, b.nc.Flush())
	check(send(service, []byte(`{}`), 10*time.Second), destination.Unavailable,
		`^the answer to the message on subject "`+service+`" was not a JetStream ack: a service, not a stream, answers on that subject$`)
}
