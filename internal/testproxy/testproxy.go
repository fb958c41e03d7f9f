// Package testproxy is a TCP proxy a test controls, for broker and Redis faults without stopping the
// machine's servers: it forwards every connection to one target, and the test takes it down (every
// connection dropped, new ones refused), brings it up again, or cuts a connection at the next reply
// (a publish that reached the broker whose confirm never comes back). For tests only.
package testproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards TCP connections to a target. Safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	down  bool
	wg    sync.WaitGroup

	cutReplies atomic.Int32 // replies still to cut (CutNextReply)
	accepted   atomic.Int64
}

// Start listens on a free loopback port and forwards to target (host:port) until Close.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port, to dial instead of the target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Accepted counts the connections the proxy has forwarded.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			_ = c.Close()
			continue
		}
		s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.accepted.Add(1)
		p.mu.Lock()
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(s, c, false) // client -> target
		go p.pipe(c, s, true)  // target -> client: the replies
	}
}

// pipe copies src to dst until either ends, then closes both; replies may be cut (CutNextReply).
func (p *Proxy) pipe(dst, src net.Conn, replies bool) {
	defer p.wg.Done()
	defer p.forget(dst, src)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if replies && p.takeCut() {
				return // the reply is dropped with the connection
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF or a closed connection: either way, this pair is over
			return
		}
	}
}

// takeCut reports whether the reply at hand is to be cut, counting it.
func (p *Proxy) takeCut() bool {
	for {
		n := p.cutReplies.Load()
		if n <= 0 {
			return false
		}
		if p.cutReplies.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

func (p *Proxy) forget(a, b net.Conn) {
	_ = a.Close()
	_ = b.Close()
	p.mu.Lock()
	delete(p.conns, a)
	delete(p.conns, b)
	p.mu.Unlock()
}

// Down drops every connection now and refuses new ones until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	p.down = true
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// Up accepts connections again.
func (p *Proxy) Up() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// DownFor is Down, then Up after d (in the background; Close ends the wait).
func (p *Proxy) DownFor(d time.Duration) {
	p.Down()
	time.AfterFunc(d, p.Up)
}

// CutNextReply arms the proxy to drop the connection that next carries bytes from the target to its
// client, without forwarding them: a request that reached the target whose answer is lost.
func (p *Proxy) CutNextReply() { p.cutReplies.Add(1) }

// Close stops the proxy and drops every connection; it returns once its goroutines have ended.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.Down()
	p.wg.Wait()
	return err
}
