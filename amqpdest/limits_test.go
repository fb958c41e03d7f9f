package amqpdest_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/amqpdest"
	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/destination/destinationtest"
)

// frameCounter reads the AMQP frames of the connections dialed through dial: the channels opened,
// and the publishes sent whose confirm (basic.ack or basic.nack) has not come back.
type frameCounter struct {
	mu                     sync.Mutex
	conns, opens, inFlight int
	maxInFlight            int
}

func (fc *frameCounter) dial(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	fc.mu.Lock()
	fc.conns++
	fc.mu.Unlock()
	return &countedConn{Conn: c, fc: fc, out: frameStream{skip: 8}}, nil // the protocol header first
}

func (fc *frameCounter) method(class, method uint16) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	switch {
	case class == 20 && method == 10: // channel.open
		fc.opens++
	case class == 60 && method == 40: // basic.publish
		fc.inFlight++
		fc.maxInFlight = max(fc.maxInFlight, fc.inFlight)
	case class == 60 && (method == 80 || method == 120): // basic.ack, basic.nack (one publish per channel)
		fc.inFlight--
	}
}

type countedConn struct {
	net.Conn
	fc      *frameCounter
	out, in frameStream // written by one goroutine at a time, read by amqp091-go's reader
}

func (c *countedConn) Write(p []byte) (int, error) {
	c.out.feed(p, c.fc.method)
	return c.Conn.Write(p)
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.feed(p[:n], c.fc.method)
	return n, err
}

// frameStream cuts a byte stream into AMQP frames (type, channel, size, payload, end) and reports
// each method frame's class and method.
type frameStream struct {
	skip int
	buf  []byte
}

func (s *frameStream) feed(p []byte, method func(class, method uint16)) {
	if s.skip > 0 {
		n := min(s.skip, len(p))
		s.skip, p = s.skip-n, p[n:]
	}
	s.buf = append(s.buf, p...)
	for len(s.buf) >= 7 {
		size := int(binary.BigEndian.Uint32(s.buf[3:7]))
		if len(s.buf) < 8+size {
			return
		}
		if s.buf[0] == 1 && size >= 4 {
			method(binary.BigEndian.Uint16(s.buf[7:9]), binary.BigEndian.Uint16(s.buf[9:11]))
		}
		s.buf = s.buf[8+size:]
	}
}

// TestMaxInFlight: 32 goroutines sending at once through one connection never have more than
// Options.MaxInFlight publishes awaiting their confirms, on at most as many channels, and every
// message arrives.
func TestMaxInFlight(t *testing.T) {
	t.Parallel()
	const maxInFlight, senders, each = 4, 32, 10
	b := newBroker(t)
	q := b.queue("inflight")
	u := b.target(url.Values{"routing_key": {q}})
	d := newDestination(t, amqpdest.Options{MaxInFlight: maxInFlight})
	var fc frameCounter
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				m := destinationtest.Message(u, fmt.Sprintf("msg_%d_%d", g, i), []byte(`{}`))
				m.Dial = fc.dial
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				assert.NoError(t, d.Send(ctx, m))
				cancel()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, senders*each, b.count(q), "every message arrived")
	fc.mu.Lock()
	defer fc.mu.Unlock()
	assert.Equal(t, 1, fc.conns, "one connection per broker and credentials")
	assert.LessOrEqual(t, fc.maxInFlight, maxInFlight, "publishes awaiting their confirm at once")
	assert.LessOrEqual(t, fc.opens, maxInFlight, "channels opened")
	assert.Zero(t, fc.inFlight, "every publish confirmed")
	t.Logf("at most %d publishes in flight on %d channels", fc.maxInFlight, fc.opens)
}

// TestOptionsBounds: New refuses Options out of bounds, naming the field.
func TestOptionsBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    amqpdest.Options
		want string
	}{
		{amqpdest.Options{MaxInFlight: -1}, "MaxInFlight is -1"},
		{amqpdest.Options{MaxInFlight: amqpdest.MaxInFlightLimit + 1}, "MaxInFlight is 2048: it must be between 1 and 2047"},
		{amqpdest.Options{MaxConnections: amqpdest.MaxConnectionsLimit + 1}, "MaxConnections is 10001"},
		{amqpdest.Options{IdleTimeout: time.Millisecond}, "IdleTimeout is 1ms"},
		{amqpdest.Options{Heartbeat: time.Hour}, "Heartbeat is 1h0m0s"},
		{amqpdest.Options{CloseTimeout: 2 * time.Minute}, "CloseTimeout is 2m0s"},
	} {
		_, err := amqpdest.New(tc.o)
		require.ErrorIs(t, err, amqpdest.ErrInvalidOptions)
		assert.Contains(t, err.Error(), tc.want)
	}
	d, err := amqpdest.New(amqpdest.Options{MaxInFlight: amqpdest.MaxInFlightLimit, MaxConnections: 1})
	require.NoError(t, err)
	require.NoError(t, d.Close())
}

// amqpGoroutines counts the goroutines running amqp091-go's code (connection readers, heartbeaters).
func amqpGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			count := 0 // goroutines, not frames: a goroutine's depth changes as it runs
			for _, g := range strings.Split(string(buf[:n]), "\n\n") {
				if strings.Contains(g, "rabbitmq/amqp091-go") {
					count++
				}
			}
			return count
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestCloseEndsEverything: Close while Sends are under way returns, every Send returns, a Send after
// Close fails with ErrClosed, and no goroutine of the destination or of its connections is left.
// Not parallel: it counts the process's goroutines.
func TestCloseEndsEverything(t *testing.T) {
	brokerURL(t)
	waitUntil(t, "the goroutines of earlier tests' connections end", func() (int, bool) {
		n := amqpGoroutines()
		return n, n == 0
	})
	b := newBroker(t)
	q := b.queue("close")
	u := b.target(url.Values{"routing_key": {q}})
	targets := []*url.URL{u, b.target(url.Values{"routing_key": {q}})}
	targets[1].Path = "/%2f"  // the same virtual host, another URL: one connection still
	admin := amqpGoroutines() // the test's own connection

	d, err := amqpdest.New(amqpdest.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, d.Send(ctx, destinationtest.Message(u, "msg_first", []byte(`{}`))))
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				err := d.Send(ctx, destinationtest.Message(targets[i%2], fmt.Sprintf("msg_%d_%d", g, i), []byte(`{}`)))
				if errors.Is(err, amqpdest.ErrClosed) {
					return
				}
			}
		})
	}
	require.NoError(t, d.Close())
	wg.Wait()
	err = d.Send(ctx, destinationtest.Message(u, "msg_after", []byte(`{}`)))
	require.ErrorIs(t, err, amqpdest.ErrClosed)
	kind, _ := destination.Classify(err)
	assert.Equal(t, destination.Unavailable, kind)
	require.NoError(t, d.Close(), "Close twice")
	waitUntil(t, "the destination's connections' goroutines end", func() (int, bool) {
		n := amqpGoroutines()
		return n, n == admin
	})
}

// TestConnectionsKept: one connection per broker address and credentials, used again by every
// Send; at MaxConnections a new one closes the one unused for the longest, or, when all are in use,
// the Send fails in words; a connection idle for IdleTimeout is closed and made again when needed.
func TestConnectionsKept(t *testing.T) {
	t.Parallel()
	b := newBroker(t)
	q := b.queue("conns")
	direct := b.target(url.Values{"routing_key": {q}})
	_, proxied := b.proxied(url.Values{"routing_key": {q}}) // the same broker at another address
	send := func(d *amqpdest.Destination, u *url.URL, dial func(context.Context, string, string) (net.Conn, error)) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m := destinationtest.Message(u, "msg_conns", []byte(`{}`))
		m.Dial = dial
		return d.Send(ctx, m)
	}

	t.Run("MaxConnections", func(t *testing.T) {
		var fc frameCounter
		d := newDestination(t, amqpdest.Options{MaxConnections: 1})
		dials := func() int { fc.mu.Lock(); defer fc.mu.Unlock(); return fc.conns }
		require.NoError(t, send(d, direct, fc.dial))
		require.NoError(t, send(d, direct, fc.dial))
		assert.Equal(t, 1, dials(), "the connection is used again")
		require.NoError(t, send(d, proxied, fc.dial))
		assert.Equal(t, 2, dials(), "another address, another connection")
		require.NoError(t, send(d, direct, fc.dial))
		assert.Equal(t, 3, dials(), "the first was closed for the second (MaxConnections 1)")

		release := make(chan struct{})
		dialing := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			err := send(d, proxied, func(ctx context.Context, network, address string) (net.Conn, error) {
				close(dialing)
				<-release
				return fc.dial(ctx, network, address)
			})
			assert.NoError(t, err)
		})
		<-dialing // a Send uses the only connection
		err := send(d, direct, fc.dial)
		close(release)
		wg.Wait()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "all 1 broker connections this destination keeps are in use: raise amqpdest.Options.MaxConnections")
	})

	t.Run("IdleTimeout", func(t *testing.T) {
		var fc frameCounter
		d := newDestination(t, amqpdest.Options{IdleTimeout: time.Second})
		dials := func() int { fc.mu.Lock(); defer fc.mu.Unlock(); return fc.conns }
		require.NoError(t, send(d, direct, fc.dial))
		require.NoError(t, send(d, proxied, fc.dial))
		require.NoError(t, send(d, direct, fc.dial))
		assert.Equal(t, 2, dials())
		time.Sleep(1500 * time.Millisecond) // past IdleTimeout
		require.NoError(t, send(d, direct, fc.dial))
		assert.Equal(t, 3, dials(), "the idle connection was closed and made again")
	})
	assert.Equal(t, 9, b.count(q), "every Send that succeeded published")
}
