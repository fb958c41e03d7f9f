package kafkadest

// The Kafka clients a Destination keeps: one per (seed brokers, credentials), shared by every Send to
// them, opened at the first Send, closed when idle, when another is needed beyond MaxClients, or at
// Close.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/smartdrop/webhooks/destination"
)

// dialFunc is Message.Dial's type: the egress guard's dialer.
type dialFunc = func(ctx context.Context, network, address string) (net.Conn, error)

// client is one Kafka client and what the pool knows of it.
type client struct {
	key string
	kc  *kgo.Client
	// dial is the Dial of the latest Send through the client: every connection the client opens, to
	// a seed broker or to a broker the metadata names, goes through it (every Dial of one
	// Dispatcher applies the same guard).
	dial atomic.Pointer[dialFunc]
	// lastFailure is the client's latest failed connection (a dial, the SASL handshake, a read or
	// a write), for the words of a Send that timed out.
	lastFailure atomic.Pointer[connFailure]
	// failed is closed (and replaced) at the next failed connection.
	failed  atomic.Pointer[chan struct{}]
	timeout time.Duration // of each dial

	// Under the pool's mutex:
	refs     int       // Sends in flight, and produces still unacknowledged after their Send ended
	lastUsed time.Time // when a Send last took or released it
}

// connFailure is a failed connection and when it failed.
type connFailure struct {
	err error
	at  time.Time
}

// dialContext dials address through the latest Send's Dial within the dial timeout.
func (c *client) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return (*c.dial.Load())(ctx, network, address)
}

// OnBrokerConnect notes a failed connection: its dial, or the handshake after it (kgo.HookBrokerConnect).
func (c *client) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	c.noteFailure(err)
}

// OnBrokerWrite notes a failed write to a broker (kgo.HookBrokerWrite).
func (c *client) OnBrokerWrite(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	c.noteFailure(err)
}

// OnBrokerRead notes a failed read from a broker (kgo.HookBrokerRead).
func (c *client) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	c.noteFailure(err)
}

// noteFailure keeps err, when not nil, as the client's latest failure and wakes the Sends waiting on
// failed.
func (c *client) noteFailure(err error) {
	if err == nil {
		return
	}
	c.lastFailure.Store(&connFailure{err: err, at: time.Now()})
	next := make(chan struct{})
	close(*c.failed.Swap(&next))
}

// dialFailed is closed at the client's next failed connection.
func (c *client) dialFailed() <-chan struct{} { return *c.failed.Load() }

// failureSince is the client's latest failed connection since t, or nil.
func (c *client) failureSince(t time.Time) error {
	if f := c.lastFailure.Load(); f != nil && !f.at.Before(t) {
		return f.err
	}
	return nil
}

// errClosed is the failure of a Send after Close.
var errClosed = errors.New("the Kafka destination is closed")

// pool keeps the clients. Safe for concurrent use.
type pool struct {
	opts Options

	mu        sync.Mutex
	clients   map[string]*client
	closed    bool
	lastSweep time.Time
}

func newPool(opts Options) *pool {
	return &pool{opts: opts, clients: map[string]*client{}}
}

// acquire returns t's client, opened now when there is none, with a reference the caller gives
// back with release; dial becomes the client's dialer. Clients idle for IdleTimeout are closed on
// the way, and so is the least recently used idle one when a new client would pass MaxClients.
func (p *pool) acquire(t target, dial dialFunc) (*client, error) {
	key := t.clientKey()
	now := time.Now()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errClosed
	}
	c := p.clients[key]
	var stale []*client
	if c == nil || now.Sub(p.lastSweep) > p.opts.IdleTimeout/2 {
		stale = p.sweepLocked(now, key)
	}
	if c == nil {
		if len(p.clients) >= p.opts.MaxClients {
			lru := p.leastRecentlyUsedLocked()
			if lru == nil {
				p.mu.Unlock()
				closeAll(stale)
				// The library's own bound, not the tenant's brokers: not counted by the breaker.
				return nil, &destination.Error{Kind: destination.Rejected, Err: fmt.Errorf(
					"every one of the destination's %d Kafka clients (kafkadest Options.MaxClients) has a message in flight: try again, or raise MaxClients", p.opts.MaxClients)}
			}
			delete(p.clients, lru.key)
			stale = append(stale, lru)
		}
		var err error
		if c, err = p.open(key, t); err != nil {
			p.mu.Unlock()
			closeAll(stale)
			return nil, err
		}
		p.clients[key] = c
	}
	c.dial.Store(&dial)
	c.refs++
	c.lastUsed = now
	p.mu.Unlock()
	closeAll(stale)
	return c, nil
}

// release gives back a reference acquire (or hold) took.
func (p *pool) release(c *client) {
	p.mu.Lock()
	c.refs--
	c.lastUsed = time.Now()
	p.mu.Unlock()
}

// hold takes one more reference on c, which the caller has acquired.
func (p *pool) hold(c *client) {
	p.mu.Lock()
	c.refs++
	p.mu.Unlock()
}

// sweepLocked takes the clients idle for IdleTimeout, but the one of key (about to be used), out of
// the pool and returns them, to close.
func (p *pool) sweepLocked(now time.Time, key string) []*client {
	p.lastSweep = now
	var stale []*client
	for k, c := range p.clients {
		if k != key && c.refs == 0 && now.Sub(c.lastUsed) >= p.opts.IdleTimeout {
			delete(p.clients, k)
			stale = append(stale, c)
		}
	}
	return stale
}

// leastRecentlyUsedLocked is the idle client unused for longest, or nil when every client is in use.
func (p *pool) leastRecentlyUsedLocked() *client {
	var lru *client
	for _, c := range p.clients {
		if c.refs == 0 && (lru == nil || c.lastUsed.Before(lru.lastUsed)) {
			lru = c
		}
	}
	return lru
}

// open makes t's client; it connects at its first produce.
func (p *pool) open(key string, t target) (*client, error) {
	c := &client{key: key, timeout: p.opts.DialTimeout}
	failed := make(chan struct{})
	c.failed.Store(&failed)
	opts := []kgo.Opt{
		kgo.SeedBrokers(t.seeds...),
		kgo.Dialer(c.dialContext),
		kgo.WithHooks(c),
		kgo.ClientID(p.opts.ClientID),
		// Success is an acks=all produce: every in-sync replica has the record.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// The idempotent producer (franz-go's default, kept on) makes the client's own retries of a
		// produce write it once. Topics are never created by a produce (no AllowAutoTopicCreation),
		// and a topic the brokers do not know fails the produce at its first metadata answer
		// instead of waiting for the topic to appear.
		kgo.UnknownTopicRetries(0),
		// After a lost connection the producer resends once the metadata is loaded again: at most
		// every 250ms (franz-go's default is 5s), so that an attempt after an outage is not held
		// up by it.
		kgo.MetadataMinAge(250 * time.Millisecond),
		// No KIP-714 client metrics pushed to a tenant's brokers.
		kgo.DisableClientMetrics(),
		kgo.ProducerLinger(p.opts.Linger),
		kgo.MaxBufferedRecords(p.opts.MaxBufferedRecords),
	}
	if p.opts.Logger != nil {
		opts = append(opts, kgo.WithLogger(slogLogger{p.opts.Logger}))
	}
	if t.user != "" {
		auth := scram.Auth{User: t.user, Pass: t.pass}
		var m sasl.Mechanism
		if t.mech == mechSCRAM256 {
			m = auth.AsSha256Mechanism()
		} else {
			m = auth.AsSha512Mechanism()
		}
		opts = append(opts, kgo.SASL(m))
	}
	kc, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("the Kafka client for %s: %w", t.brokers(), err)
	}
	c.kc = kc
	return c, nil
}

// close closes every client and refuses new ones; it returns once each client's goroutines have
// ended (kgo.Client.Close fails the records it still holds).
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	all := make([]*client, 0, len(p.clients))
	for _, c := range p.clients {
		all = append(all, c)
	}
	clear(p.clients)
	p.mu.Unlock()
	closeAll(all)
}

func closeAll(cs []*client) {
	for _, c := range cs {
		c.kc.Close()
	}
}

// slogLogger passes the Kafka client's warnings and errors to a slog.Logger.
type slogLogger struct{ l *slog.Logger }

func (slogLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (s slogLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelWarn
	if level == kgo.LogLevelError {
		lv = slog.LevelError
	}
	s.l.Log(context.Background(), lv, "kafkadest: "+msg, keyvals...)
}
