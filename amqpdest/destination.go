package amqpdest

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/smartdrop/webhooks/destination"
)

// Destination publishes webhooks' messages to RabbitMQ (or any AMQP 0-9-1 broker) with publisher
// confirms. It serves the schemes amqp and amqps; put it in webhooks.Options.Destinations. Safe for
// concurrent use; Close it when done.
type Destination struct {
	opts Options

	mu      sync.Mutex
	conns   map[connKey]*brokerConn
	closed  bool
	sweptAt time.Time

	closing sync.WaitGroup // connections closed in the background (idle, evicted)
}

var _ destination.Destination = (*Destination)(nil)

// New returns a Destination. It does no I/O: each broker connection is made by the first Send that
// needs it, through that message's Dial. Its error wraps ErrInvalidOptions for Options out of bounds.
func New(opts Options) (*Destination, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Destination{opts: o, conns: map[connKey]*brokerConn{}}, nil
}

// Schemes are amqp and amqps.
func (d *Destination) Schemes() []string { return []string{"amqp", "amqps"} }

// Check refuses a URL this destination cannot publish to, in words that say what to change:
// amqp[s]://user:password@host:port/vhost?exchange=X&routing_key=K, with no other query parameter
// (amqp091-go's certfile, keyfile and the like are refused: a webhook's URL must not make the
// library read local files). It does no I/O.
func (d *Destination) Check(u *url.URL) error {
	_, err := parseTarget(u)
	return err
}

// Send publishes m — persistent, mandatory, on a channel in confirm mode — to the exchange and
// routing key of its URL (the event type by default), and returns nil once the broker has confirmed
// it (basic.ack). message_id is m.ID (the webhook-id, the same on every attempt), type the event type,
// content_type the message's (application/json), and every header but Content-Type (webhook-id,
// webhook-timestamp, webhook-signature, custom headers) an AMQP header under its lower-case name. A
// message no queue takes (basic.return), a nack, a connection lost before the confirm and no confirm
// within ctx are failures in words (of kind Unavailable: retried, counted by the circuit breaker); a
// login or an access the broker refuses is Rejected; a message larger than the broker takes is
// Permanent.
func (d *Destination) Send(ctx context.Context, m *destination.Message) error {
	t, err := parseTarget(m.URL)
	if err != nil {
		return &destination.Error{Kind: destination.Permanent, Err: err}
	}
	rk := t.routingKeyFor(m.EventType)
	if len(rk) > maxShortString {
		return failKind(destination.Permanent, nil, "the routing key %q is longer than %d bytes", rk[:32]+"…", maxShortString)
	}
	pub, err := publishing(m)
	if err != nil {
		return &destination.Error{Kind: destination.Permanent, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return ctxWords(ctx, "waiting to publish")
	}
	bc, err := d.conn(t.key)
	if err != nil {
		return err
	}
	defer d.release(bc)
	return bc.publish(ctx, m, t, rk, pub)
}

// publishing is m as an AMQP message.
func publishing(m *destination.Message) (amqp.Publishing, error) {
	p := amqp.Publishing{
		Headers:      make(amqp.Table, len(m.Header)),
		ContentType:  "application/json",
		DeliveryMode: amqp.Persistent,
		MessageId:    m.ID,
		Type:         m.EventType,
		Body:         m.Body,
	}
	for name, vs := range m.Header {
		if len(vs) == 0 {
			continue
		}
		if strings.EqualFold(name, "Content-Type") {
			p.ContentType = vs[0]
			continue
		}
		if len(name) > maxShortString {
			return p, fmt.Errorf("header %q… is longer than %d bytes, the most an AMQP header name has", name[:32], maxShortString)
		}
		p.Headers[strings.ToLower(name)] = strings.Join(vs, ", ")
	}
	if ts, err := strconv.ParseInt(m.Header.Get("Webhook-Timestamp"), 10, 64); err == nil {
		p.Timestamp = time.Unix(ts, 0)
	}
	return p, nil
}

// conn returns the connection of k, counted in use until release, made (not yet connected) when
// there is none: closing the one unused for the longest when MaxConnections are kept.
func (d *Destination) conn(k connKey) (*brokerConn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fail(ErrClosed, "the AMQP destination is closed")
	}
	now := time.Now()
	if now.Sub(d.sweptAt) >= d.opts.IdleTimeout/4 {
		d.sweptAt = now
		for key, bc := range d.conns {
			if bc.users == 0 && now.Sub(bc.usedAt) >= d.opts.IdleTimeout {
				d.dropLocked(key, bc, "idle for "+d.opts.IdleTimeout.String())
			}
		}
	}
	bc := d.conns[k]
	if bc == nil {
		if len(d.conns) >= d.opts.MaxConnections {
			var oldest *brokerConn
			for _, c := range d.conns {
				if c.users == 0 && (oldest == nil || c.usedAt.Before(oldest.usedAt)) {
					oldest = c
				}
			}
			if oldest == nil {
				return nil, fail(nil, "all %d broker connections this destination keeps are in use: raise amqpdest.Options.MaxConnections", d.opts.MaxConnections)
			}
			d.dropLocked(oldest.key, oldest, "the connection unused for the longest, for a new one (Options.MaxConnections)")
		}
		bc = newBrokerConn(d, k)
		d.conns[k] = bc
	}
	bc.users++
	bc.usedAt = now
	return bc, nil
}

// release ends a Send's use of bc.
func (d *Destination) release(bc *brokerConn) {
	d.mu.Lock()
	bc.users--
	bc.usedAt = time.Now()
	d.mu.Unlock()
}

// dropLocked forgets bc and closes it in the background (Close waits for it). d.mu is held.
func (d *Destination) dropLocked(k connKey, bc *brokerConn, why string) {
	delete(d.conns, k)
	d.closing.Add(1)
	go func() {
		defer d.closing.Done()
		bc.close(why)
	}()
}

// Close closes every broker connection (a publish still awaiting its confirm fails) and waits for
// them; Sends after it fail with ErrClosed. No goroutine of the destination outlives it.
func (d *Destination) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	conns := d.conns
	d.conns = nil
	d.mu.Unlock()
	var wg sync.WaitGroup
	for _, bc := range conns {
		wg.Go(func() { bc.close("the destination is closed") })
	}
	wg.Wait()
	d.closing.Wait()
	return nil
}
