package amqpdest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/smartdrop/webhooks/destination"
)

// frameSize is the AMQP frame size proposed to the broker (RabbitMQ's default).
const frameSize = 128 << 10

// brokerConn is the Destination's connection to one (broker address, credentials, virtual host):
// connected by the first Send that needs it, connected again by the next Send after it was lost. It
// keeps a pool of channels in confirm mode, each carrying one publish at a time.
type brokerConn struct {
	d   *Destination
	key connKey

	slots   chan struct{} // a publish awaiting its confirm holds one (MaxInFlight)
	dialing chan struct{} // held by the Send that connects

	mu     sync.Mutex
	cur    *session // nil: not connected
	closed bool

	// guarded by d.mu
	users  int       // Sends using it
	usedAt time.Time // when a Send last began or ended
}

// session is one AMQP connection of a brokerConn.
type session struct {
	conn     *amqp.Connection
	raw      net.Conn // the TCP connection under it: closed to abort a call the broker does not answer
	closes   chan *amqp.Error
	blocks   chan amqp.Blocking
	blocked  string        // why the broker blocks publishers, while it does
	idle     []*pubChannel // channels ready for a publish
	draining []*pubChannel // channels whose publish's Send stopped waiting for its confirm
}

// pubChannel is a channel in confirm mode, carrying one publish at a time, so that a basic.return
// on it is its publish's, and a channel exception (no such exchange) fails that publish alone.
type pubChannel struct {
	s       *session
	ch      *amqp.Channel
	returns chan amqp.Return
	closes  chan *amqp.Error
	pending *amqp.DeferredConfirmation // while draining: the confirm no Send awaits any longer
}

func newBrokerConn(d *Destination, k connKey) *brokerConn {
	return &brokerConn{d: d, key: k, slots: make(chan struct{}, d.opts.MaxInFlight), dialing: make(chan struct{}, 1)}
}

// publish sends p to t's exchange with routing key rk and waits for the broker's confirm.
func (bc *brokerConn) publish(ctx context.Context, m *destination.Message, t target, rk string, p amqp.Publishing) error {
	bc.reclaim()
	select {
	case bc.slots <- struct{}{}:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fail(ErrNotConfirmed, "%s: %d messages on the connection to %s were already awaiting theirs (amqpdest.Options.MaxInFlight)",
				ErrNotConfirmed.Error(), cap(bc.slots), bc.key.where())
		}
		return ctxWords(ctx, "waiting for a channel")
	}
	held := true
	defer func() {
		if held {
			<-bc.slots
		}
	}()
	pc, err := bc.channel(ctx, m.Dial)
	if err != nil {
		return err
	}
	abort := context.AfterFunc(ctx, func() { _ = pc.s.raw.Close() }) // a write the broker does not take
	dc, err := pc.ch.PublishWithDeferredConfirm(t.exchange, rk, true, false, p)
	if !abort() {
		return fail(ctx.Err(), "the broker at %s did not take the message within the timeout%s: the connection is dropped",
			bc.key.where(), blockedWords(pc.s))
	}
	if err != nil {
		bc.discard(pc)
		var ae *amqp.Error
		if errors.As(err, &ae) || errors.Is(err, net.ErrClosed) {
			return closedWords(bc.key, t, rk, pc.closeError())
		}
		return fail(err, "the message could not be published to the broker at %s: %v", bc.key.where(), err)
	}
	select {
	case <-dc.Done():
	case <-ctx.Done():
		held = false // the slot stays taken until the broker answers or the connection is lost
		bc.abandon(pc, dc)
		if errors.Is(ctx.Err(), context.Canceled) {
			return fail(ctx.Err(), "the attempt was canceled before the broker confirmed the message")
		}
		return fail(ErrNotConfirmed, "%s", ErrNotConfirmed.Error())
	}
	if !dc.Acked() {
		if pc.ch.IsClosed() {
			return closedWords(bc.key, t, rk, pc.closeError())
		}
		bc.put(pc)
		return fail(nil, "the broker at %s refused the message (basic.nack): it could not take it", bc.key.where())
	}
	select {
	case r, ok := <-pc.returns:
		if ok {
			bc.put(pc)
			return fail(nil, "no queue is bound to %s with routing key %s (the broker returned the message: %d %s)",
				exchangeWords(t.exchange), strconv.Quote(rk), r.ReplyCode, r.ReplyText)
		}
	default:
	}
	bc.put(pc)
	m.Response = fmt.Sprintf("confirmed by the broker at %s: %s, routing key %s", bc.key.where(), exchangeWords(t.exchange), strconv.Quote(rk))
	return nil
}

// channel returns a channel in confirm mode, from the pool or opened now, connecting first when
// there is no connection (dialing with dial).
func (bc *brokerConn) channel(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error)) (*pubChannel, error) {
	for {
		bc.mu.Lock()
		if bc.closed {
			bc.mu.Unlock()
			return nil, fail(ErrClosed, "the AMQP destination is closed")
		}
		s := bc.liveLocked()
		if s != nil {
			s.readBlocks()
			if s.blocked != "" {
				bc.mu.Unlock()
				return nil, fail(nil, "the broker at %s is blocking publishers (%s): it is low on a resource", bc.key.where(), s.blocked)
			}
			if n := len(s.idle); n > 0 {
				pc := s.idle[n-1]
				s.idle = s.idle[:n-1]
				bc.mu.Unlock()
				if pc.ch.IsClosed() {
					continue
				}
				return pc, nil
			}
			bc.mu.Unlock()
			return bc.open(ctx, s)
		}
		bc.mu.Unlock()
		if err := bc.connect(ctx, dial); err != nil {
			return nil, err
		}
	}
}

// liveLocked returns the current session unless it was lost (then it is forgotten). bc.mu is held.
func (bc *brokerConn) liveLocked() *session {
	s := bc.cur
	if s == nil {
		return nil
	}
	if !s.conn.IsClosed() {
		return s
	}
	bc.cur = nil
	for range s.draining { // their confirms will never come
		<-bc.slots
	}
	s.draining, s.idle = nil, nil
	reason := "the connection closed"
	select {
	case e, ok := <-s.closes:
		if ok && e != nil {
			reason = e.Error()
		}
	default:
	}
	bc.d.opts.Logger.Warn("amqpdest: connection lost", "broker", bc.key.where(), "reason", reason)
	return nil
}

// connect makes the connection, unless another Send did meanwhile.
func (bc *brokerConn) connect(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error)) error {
	select {
	case bc.dialing <- struct{}{}:
	case <-ctx.Done():
		return ctxWords(ctx, "connecting to the broker at "+bc.key.where())
	}
	defer func() { <-bc.dialing }()
	bc.mu.Lock()
	live := bc.liveLocked() != nil
	bc.mu.Unlock()
	if live {
		return nil
	}
	s, err := bc.dial(ctx, dial)
	if err != nil {
		return err
	}
	bc.mu.Lock()
	closed := bc.closed
	if !closed {
		bc.cur = s
	}
	bc.mu.Unlock()
	if closed {
		_ = s.conn.CloseDeadline(time.Now().Add(bc.d.opts.CloseTimeout))
		return fail(ErrClosed, "the AMQP destination is closed")
	}
	bc.d.opts.Logger.Info("amqpdest: connected", "broker", bc.key.where())
	return nil
}

// dial opens an AMQP connection: TCP through dial (the egress guard's), TLS for amqps with the
// URL's host as server name, then the AMQP handshake, all within ctx.
func (bc *brokerConn) dial(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error)) (*session, error) {
	k := bc.key
	raw, err := dial(ctx, "tcp", k.addr)
	if err != nil {
		return nil, dialWords(k, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(dl) // the AMQP handshake clears it (amqp091-go's openComplete)
	}
	abort := context.AfterFunc(ctx, func() { _ = raw.SetDeadline(time.Unix(1, 0)) })
	var nc net.Conn = raw
	if k.tls {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if bc.d.opts.TLSConfig != nil {
			cfg = bc.d.opts.TLSConfig.Clone()
		}
		cfg.ServerName = k.host
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			abort()
			_ = raw.Close()
			return nil, fail(err, "the TLS handshake with the broker at %s failed: %s", k.where(), tlsWords(ctx, err))
		}
		nc = tc
	}
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName("smartdrop-webhooks")
	conn, err := amqp.Open(nc, amqp.Config{
		SASL:       []amqp.Authentication{&amqp.PlainAuth{Username: k.user, Password: k.password}},
		Vhost:      k.vhost,
		Heartbeat:  bc.d.opts.Heartbeat,
		Locale:     "en_US",
		FrameSize:  frameSize,
		Properties: props,
	})
	if !abort() { // ctx ended during the handshake: the socket's deadline is past
		_ = nc.Close()
		return nil, ctxWords(ctx, "opening the AMQP connection to the broker at "+k.where())
	}
	if err != nil {
		_ = nc.Close()
		return nil, openWords(k, err)
	}
	return &session{
		conn:   conn,
		raw:    raw,
		closes: conn.NotifyClose(make(chan *amqp.Error, 1)),
		blocks: conn.NotifyBlocked(make(chan amqp.Blocking, 16)),
	}, nil
}

// tlsWords says why a TLS handshake failed.
func tlsWords(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return "no answer within the timeout"
	}
	var ce *tls.CertificateVerificationError
	if errors.As(err, &ce) {
		return ce.Err.Error()
	}
	return err.Error()
}

// open opens a channel on s and puts it in confirm mode. A broker that does not answer within ctx
// has its connection dropped.
func (bc *brokerConn) open(ctx context.Context, s *session) (*pubChannel, error) {
	abort := context.AfterFunc(ctx, func() { _ = s.raw.Close() })
	ch, err := s.conn.Channel()
	if err == nil {
		if err = ch.Confirm(false); err != nil {
			_ = ch.Close()
		}
	}
	if !abort() {
		return nil, fail(ctx.Err(), "the broker at %s did not open a channel within the timeout: the connection is dropped", bc.key.where())
	}
	if err != nil {
		if errors.Is(err, amqp.ErrChannelMax) {
			return nil, fail(err, "the broker at %s allows fewer channels per connection than amqpdest.Options.MaxInFlight (%d): lower it",
				bc.key.where(), bc.d.opts.MaxInFlight)
		}
		var ae *amqp.Error
		if errors.As(err, &ae) && ae.Server {
			return nil, fail(err, "the broker at %s did not open a channel: %s", bc.key.where(), ae.Reason)
		}
		return nil, fail(err, "the connection to the broker at %s was lost while a channel was opened", bc.key.where())
	}
	return &pubChannel{
		s:       s,
		ch:      ch,
		returns: ch.NotifyReturn(make(chan amqp.Return, 1)),
		closes:  ch.NotifyClose(make(chan *amqp.Error, 1)),
	}, nil
}

// closeError is why pc closed, when the broker or the connection said so.
func (pc *pubChannel) closeError() *amqp.Error {
	select {
	case e, ok := <-pc.closes:
		if ok {
			return e
		}
	default:
	}
	select {
	case e, ok := <-pc.s.closes:
		if ok {
			return e
		}
	default:
	}
	return nil
}

// readBlocks takes in the broker's connection.blocked and unblocked notices. bc.mu is held.
func (s *session) readBlocks() {
	for {
		select {
		case b, ok := <-s.blocks:
			if !ok {
				return
			}
			s.blocked = ""
			if b.Active {
				s.blocked = b.Reason
				if s.blocked == "" {
					s.blocked = "no reason given"
				}
			}
		default:
			return
		}
	}
}

// blockedWords adds why the broker blocks publishers, when it says so.
func blockedWords(s *session) string {
	if s.blocked == "" {
		return ""
	}
	return " (it is blocking publishers: " + s.blocked + ")"
}

// put returns pc to its session's pool, after the publish it carried was answered.
func (bc *brokerConn) put(pc *pubChannel) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if bc.cur != pc.s || pc.ch.IsClosed() {
		return
	}
	drainReturns(pc)
	pc.s.idle = append(pc.s.idle, pc)
}

// discard forgets pc, closing it if it is still open.
func (bc *brokerConn) discard(pc *pubChannel) {
	if !pc.ch.IsClosed() {
		_ = pc.ch.Close()
	}
}

// abandon keeps pc, whose publish's Send stopped waiting for the confirm, apart until the broker
// answers it (reclaim); it keeps its slot meanwhile.
func (bc *brokerConn) abandon(pc *pubChannel, dc *amqp.DeferredConfirmation) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if bc.cur != pc.s {
		<-bc.slots // its connection is gone: its confirm will never come
		return
	}
	pc.pending = dc
	pc.s.draining = append(pc.s.draining, pc)
}

// reclaim returns to the pool the abandoned channels whose confirms have come, freeing their slots.
func (bc *brokerConn) reclaim() {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	s := bc.liveLocked()
	if s == nil || len(s.draining) == 0 {
		return
	}
	kept := s.draining[:0]
	for _, pc := range s.draining {
		select {
		case <-pc.pending.Done():
			pc.pending = nil
			<-bc.slots
			if !pc.ch.IsClosed() {
				drainReturns(pc)
				s.idle = append(s.idle, pc)
			}
		default:
			kept = append(kept, pc)
		}
	}
	clear(s.draining[len(kept):])
	s.draining = kept
}

// drainReturns drops a late basic.return of an earlier publish on pc.
func drainReturns(pc *pubChannel) {
	for {
		select {
		case _, ok := <-pc.returns:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// close closes the connection, bounded by Options.CloseTimeout; a Send connecting meanwhile closes
// what it made.
func (bc *brokerConn) close(why string) {
	bc.mu.Lock()
	bc.closed = true
	s := bc.cur
	bc.cur = nil
	bc.mu.Unlock()
	if s == nil {
		return
	}
	_ = s.conn.CloseDeadline(time.Now().Add(bc.d.opts.CloseTimeout))
	bc.d.opts.Logger.Info("amqpdest: connection closed", "broker", bc.key.where(), "why", why)
}
