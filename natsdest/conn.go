package natsdest

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errConnectionLost is the cause of a publish's end when its connection was lost before the ack
// came back.
var errConnectionLost = errors.New("natsdest: the connection was lost")

// conn is one connection to a NATS server (or cluster), with its JetStream context, shared by every
// Send to the same scheme, servers and credentials.
type conn struct {
	key   string // connKey: scheme, credentials, hosts (never logged)
	hosts string // the URL's host list, for words and logs

	ready chan struct{} // closed once the first connect has ended: nc and js, or err, are set
	nc    *nats.Conn
	js    jetstream.JetStream
	err   error

	closed chan struct{} // closed by nats.go's ClosedHandler, after which nc's dispatcher ends

	mu     sync.Mutex
	epoch  context.Context // ends when the connection is lost; a new one once it is back
	cancel context.CancelFunc

	violation atomic.Pointer[violation] // the server's last permissions violation

	// users and lastUsed are guarded by the pool's mutex.
	users    int       // Sends holding the connection
	lastUsed time.Time // when the last Send released it
}

func newConn(key, hosts string) *conn {
	c := &conn{key: key, hosts: hosts, ready: make(chan struct{}), closed: make(chan struct{})}
	c.epoch, c.cancel = context.WithCancel(context.Background())
	return c
}

// violation is a permissions violation the server reported, and when.
type violation struct {
	at   time.Time
	text string
}

// violated records a permissions violation the server reported.
func (c *conn) violated(text string) {
	c.violation.Store(&violation{at: time.Now(), text: text})
}

// violationSince is the text of the server's last permissions violation, if it came at or after
// start, else "".
func (c *conn) violationSince(start time.Time) string {
	if v := c.violation.Load(); v != nil && !v.at.Before(start) {
		return v.text
	}
	return ""
}

// connected reports whether c's first connect has ended with a connection.
func (c *conn) connected() bool {
	select {
	case <-c.ready:
		return c.nc != nil
	default:
		return false
	}
}

// lost ends the current epoch: publishes waiting for their ack fail at once.
func (c *conn) lost() {
	c.mu.Lock()
	c.cancel()
	c.mu.Unlock()
}

// regained starts a new epoch, once the connection is back.
func (c *conn) regained() {
	c.mu.Lock()
	if c.epoch.Err() != nil {
		c.epoch, c.cancel = context.WithCancel(context.Background())
	}
	c.mu.Unlock()
}

// publish publishes msg to JetStream and waits for its ack, within ctx; it fails with
// errConnectionLost as soon as the connection is lost (the ack cannot come back on it: the engine's
// retry, with the same Nats-Msg-Id, finds out whether the stream has the message).
func (c *conn) publish(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	c.mu.Lock()
	epoch := c.epoch
	c.mu.Unlock()
	if epoch.Err() != nil {
		return nil, nats.ErrConnectionReconnecting
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(epoch, func() { cancel(errConnectionLost) })
	defer stop()
	ack, err := c.js.PublishMsg(ctx, msg)
	if err != nil && errors.Is(context.Cause(ctx), errConnectionLost) {
		return nil, errConnectionLost
	}
	return ack, err
}

// dialer is nats.go's CustomDialer: it dials with a Message's Dial (the egress guard's), each connect
// bounded by timeout and by ctx (the Destination's life), and closes what it dialed when ctx ends,
// so that Close also ends a connect or reconnect that is in its handshake.
type dialer struct {
	ctx     context.Context
	dial    func(ctx context.Context, network, address string) (net.Conn, error)
	timeout time.Duration
}

// Dial dials address through the guard.
func (d *dialer) Dial(network, address string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(d.ctx, d.timeout)
	defer cancel()
	nc, err := d.dial(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return &ownedConn{Conn: nc, stop: context.AfterFunc(d.ctx, func() { _ = nc.Close() })}, nil
}

// ownedConn is a connection the dialer closes when its Destination closes.
type ownedConn struct {
	net.Conn
	stop func() bool
}

// Close closes the connection.
func (c *ownedConn) Close() error {
	c.stop()
	return c.Conn.Close()
}
