// Package natsdest is the NATS JetStream destination of github.com/smartdrop/webhooks: a webhook whose
// URL is nats://[user:password@]host:port/SUBJECT (or tls:// for TLS) gets each delivery published to
// JetStream on SUBJECT, and an attempt succeeds only once the stream's PubAck says the stream has the
// message.
//
// The message's Nats-Msg-Id is the delivery's webhook-id, the same on every attempt, so that
// JetStream's duplicate window drops a repeat (an attempt whose ack was lost, then retried). Its body
// is the Standard Webhooks body, and its headers are webhook-id, webhook-timestamp,
// webhook-signature, Content-Type and the webhook's custom headers: a consumer verifies a message
// with the verify package, as an HTTP receiver does, giving it the message's headers
// (http.Header(msg.Header)) and data.
//
//	nd, err := natsdest.New(natsdest.Options{})
//	…
//	defer nd.Close()
//	d, err := webhooks.New(rdb, webhooks.Options{Destinations: []webhooks.Destination{nd}})
//
// README.md says what the URL, the headers, the dedup window and each failure mean.
package natsdest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/smartdrop/webhooks/destination"
)

// Destination publishes webhooks' messages to NATS JetStream. It keeps one connection per scheme,
// servers and credentials, made by the first Send that needs it, shared by every Send to it, and
// closed when idle or by Close. Safe for concurrent use.
type Destination struct {
	opts  Options
	conns *pool
}

var _ destination.Destination = (*Destination)(nil)

// New returns a Destination of opts. It does no I/O and starts no goroutine: connections are made
// by Send. Its error wraps ErrInvalidOptions for an option out of its bounds.
func New(opts Options) (*Destination, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Destination{opts: o, conns: newPool(o)}, nil
}

// Schemes are nats (TLS when the server requires it) and tls (TLS required).
func (d *Destination) Schemes() []string { return []string{"nats", "tls"} }

// Check refuses a URL that names no subject to publish to (its path), names a wildcard, an empty
// token or a subject NATS reserves ($JS., $SYS., _INBOX.), or has a query or a fragment. It does no
// I/O: whether a stream takes the subject is known when a message is sent.
func (d *Destination) Check(u *url.URL) error { return checkURL(u) }

// Send publishes m to JetStream on its URL's subject, with Nats-Msg-Id = m.ID and m.Header as
// headers, and returns nil once the PubAck came back; m.Response is then the ack's stream and
// sequence ("stream ORDERS, sequence 42", with ", duplicate" when the stream had the message
// already). The first Send to a server connects to it, with m.Dial. A failure says in words what
// happened (README.md lists them); its kind is destination.Unavailable (retried, counted by the
// breaker: no stream for the subject, no ack in time, no connection) unless it says otherwise.
func (d *Destination) Send(ctx context.Context, m *destination.Message) error {
	subject, err := subjectOf(m.URL)
	if err != nil {
		return &destination.Error{Kind: destination.Permanent, Err: err}
	}
	msg, err := natsMsg(subject, m)
	if err != nil {
		return &destination.Error{Kind: destination.Permanent, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return publishError(err, subject, m.URL.Host, 0, 0, "")
	}
	c, err := d.conns.get(ctx, m)
	if err != nil {
		return err
	}
	defer d.conns.release(c)
	start := time.Now()
	ack, err := c.publish(ctx, msg)
	if err != nil {
		size := len(msg.Data)
		for k, vs := range msg.Header {
			for _, v := range vs {
				size += len(k) + len(v) + 4
			}
		}
		return publishError(err, subject, c.hosts, size, c.nc.MaxPayload(), c.violationSince(start))
	}
	m.Response = receipt(ack)
	return nil
}

// Close drains and closes every connection, and returns once each is closed (at most ConnectTimeout
// for a connection's drain) and no goroutine of the Destination's is left. A Send after Close
// fails.
func (d *Destination) Close() error {
	d.conns.close()
	return nil
}

// natsMsg is m as a NATS message to subject: its body, its headers, and Nats-Msg-Id = m.ID. A header
// whose name starts with Nats- is JetStream's own (an expected stream, a rollup that purges the
// stream, a message id), so a webhook's header of that name is refused, in words.
func natsMsg(subject string, m *destination.Message) (*nats.Msg, error) {
	h := make(nats.Header, len(m.Header)+1)
	for k, v := range m.Header {
		if len(k) >= 5 && strings.EqualFold(k[:5], "Nats-") {
			return nil, fmt.Errorf("the header %s is JetStream's own (Nats-…): remove it from the webhook's custom headers", k)
		}
		h[k] = v
	}
	h[jetstream.MsgIDHeader] = []string{m.ID}
	return &nats.Msg{Subject: subject, Header: h, Data: m.Body}, nil
}
