package natsdest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/smartdrop/webhooks/destination"
)

// Connection settings of every connection (README.md, "Connections").
const (
	pingInterval   = 20 * time.Second // the client's PING when idle; 3 unanswered drop the connection
	maxPingsOut    = 3
	clientName     = "smartdrop-webhooks natsdest"
	minSweepPeriod = 500 * time.Millisecond
	maxSweepPeriod = time.Minute
)

// errClosed is Send's failure after Close.
var errClosed = errors.New("the NATS destination is closed")

// pool keeps the connections, one per connKey, made lazily by the first Send that needs one and
// closed when idle or by Close. Safe for concurrent use.
type pool struct {
	opts   Options
	ctx    context.Context // ends at Close: dials and reconnects stop
	cancel context.CancelFunc

	mu     sync.Mutex
	conns  map[string]*conn
	closed bool
	sweeps bool           // the idle sweep runs
	wg     sync.WaitGroup // connects and the sweep
}

func newPool(opts Options) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	return &pool{opts: opts, ctx: ctx, cancel: cancel, conns: map[string]*conn{}}
}

// get returns the connection of m's URL, connected, once it is, or ctx's end: its first Send starts
// the connect (dialed with m.Dial), which goes on past that Send's ctx for the next one, bounded by
// ConnectTimeout. The caller releases it.
func (p *pool) get(ctx context.Context, m *destination.Message) (*conn, error) {
	key := connKey(m.URL)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errClosed
	}
	c := p.conns[key]
	if c == nil {
		if len(p.conns) >= p.opts.MaxConnections {
			p.mu.Unlock()
			return nil, fmt.Errorf("cannot connect to the NATS server at %s: this destination keeps at most %d connections (natsdest Options.MaxConnections), all in use",
				m.URL.Host, p.opts.MaxConnections)
		}
		c = newConn(key, m.URL.Host)
		p.conns[key] = c
		p.wg.Add(1)
		go p.connect(c, m.URL, m.Dial)
		if !p.sweeps {
			p.sweeps = true
			p.wg.Add(1)
			go p.sweep()
		}
	}
	c.users++
	p.mu.Unlock()
	select {
	case <-c.ready:
	case <-ctx.Done():
		p.release(c)
		return nil, connectError(ctx.Err(), c.hosts)
	}
	if c.err != nil {
		p.release(c)
		return nil, c.err
	}
	return c, nil
}

// release ends a Send's use of c.
func (p *pool) release(c *conn) {
	p.mu.Lock()
	c.users--
	c.lastUsed = time.Now()
	p.mu.Unlock()
}

// forget removes c from the pool, when it is still the connection of its key.
func (p *pool) forget(c *conn) {
	p.mu.Lock()
	if p.conns[c.key] == c {
		delete(p.conns, c.key)
	}
	p.mu.Unlock()
}

// connect makes c's connection to u's servers, dialed with dial, and sets c.nc and c.js, or c.err.
func (p *pool) connect(c *conn, u *url.URL, dial func(ctx context.Context, network, address string) (net.Conn, error)) {
	defer p.wg.Done()
	log := p.opts.Logger.With("server", c.hosts)
	opts := []nats.Option{
		nats.Name(clientName),
		nats.SetCustomDialer(&dialer{ctx: p.ctx, dial: dial, timeout: p.opts.ConnectTimeout}),
		nats.SkipHostLookup(), // the guard's dialer resolves, and checks every address
		nats.Timeout(p.opts.ConnectTimeout),
		nats.DrainTimeout(p.opts.ConnectTimeout),
		nats.MaxReconnects(-1), // until idle or Close
		nats.ReconnectWait(p.opts.ReconnectWait),
		nats.ReconnectBufSize(-1), // no publish waits in a buffer while reconnecting: it fails at once
		nats.PingInterval(pingInterval),
		nats.MaxPingsOutstanding(maxPingsOut),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			c.lost()
			if err != nil {
				log.Warn("natsdest: connection lost; reconnecting", "error", connectError(err, c.hosts).Error())
			} else {
				log.Info("natsdest: connection lost; reconnecting")
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			c.regained()
			log.Info("natsdest: reconnected")
		}),
		nats.ClosedHandler(func(*nats.Conn) {
			c.lost()
			p.forget(c)
			log.Info("natsdest: connection closed")
			close(c.closed)
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				c.violated(trimNats(err))
			}
			log.Warn("natsdest: the server reported an error", "error", err.Error())
		}),
	}
	// A tls:// URL requires TLS, verified with TLSConfig (nats.go clones it and sets ServerName to
	// the host); a nats:// one upgrades to TLS only when the server requires it (nats.go: a TLS
	// configuration given would require TLS).
	if u.Scheme == "tls" {
		opts = append(opts, nats.Secure(p.opts.TLSConfig))
	}
	if u.User != nil {
		if pass, ok := u.User.Password(); ok {
			opts = append(opts, nats.UserInfo(u.User.Username(), pass))
		} else {
			opts = append(opts, nats.Token(u.User.Username()))
		}
	}
	nc, err := nats.Connect(strings.Join(servers(u), ","), opts...)
	if err != nil {
		c.err = connectError(err, c.hosts)
		p.forget(c)
		close(c.ready)
		return
	}
	js, err := jetstream.New(nc)
	if err != nil { // only for invalid options: none are given
		nc.Close()
		<-c.closed
		c.err = fmt.Errorf("cannot use JetStream on the NATS server at %s: %w", c.hosts, err)
		p.forget(c)
		close(c.ready)
		return
	}
	c.nc, c.js = nc, js
	close(c.ready)
}

// sweep closes the connections no Send has used for IdleTimeout, until Close.
func (p *pool) sweep() {
	defer p.wg.Done()
	period := min(max(p.opts.IdleTimeout/2, minSweepPeriod), maxSweepPeriod)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case now := <-t.C:
			var idle []*conn
			p.mu.Lock()
			for key, c := range p.conns {
				if c.users == 0 && c.connected() && now.Sub(c.lastUsed) >= p.opts.IdleTimeout {
					delete(p.conns, key)
					idle = append(idle, c)
				}
			}
			p.mu.Unlock()
			for _, c := range idle {
				p.opts.Logger.Info("natsdest: closing an idle connection", "server", c.hosts, "idle", p.opts.IdleTimeout)
				p.retire(c)
			}
		}
	}
}

// retire drains and closes c (no Send holds it) and waits for its close, bounded by the drain's
// timeout.
func (p *pool) retire(c *conn) {
	if err := c.nc.Drain(); err != nil { // reconnecting or closed already: nothing to drain
		c.nc.Close()
	}
	select {
	case <-c.closed:
	case <-time.After(p.opts.ConnectTimeout + time.Second): // Drain closes by its timeout; this is the fallback
		c.nc.Close()
		<-c.closed
	}
}

// close stops the connects and the sweep, then drains and closes every connection, and returns once
// each is closed.
func (p *pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.cancel()
	p.mu.Unlock()
	p.wg.Wait() // connects end (their dials are canceled) and so does the sweep
	p.mu.Lock()
	conns := p.conns
	p.conns = map[string]*conn{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		if c.nc != nil {
			wg.Go(func() { p.retire(c) })
		}
	}
	wg.Wait()
}
