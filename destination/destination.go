// Package destination is where a webhook's messages go: the Destination interface a delivery's
// attempts are made through, the Message each attempt sends, and the failures a destination reports
// (Error). It imports the standard library only, so a destination module (amqpdest, natsdest,
// kafkadest, or one of your own) depends on nothing else of the library's; the root package
// github.com/smartdrop/webhooks names the same types (webhooks.Destination, webhooks.Message).
//
// The engine owns every delivery guarantee: one delivery per (webhook, event) pair, retries with
// jitter, the circuit breaker, RateLimit, MaxConcurrency, ordering per key, leases and crash recovery.
// A destination only sends one message when asked, and says how it went:
//
//   - nil: the destination durably has the message (an HTTP 2xx, a broker's publisher confirm, a
//     JetStream ack, a Kafka acks=all produce). The delivery succeeds.
//   - an error: the attempt failed. A plain error is retried by the schedule and counts toward the
//     webhook's circuit breaker (the destination is unwell); return an *Error of another Kind, or with
//     a RetryAfter, to say otherwise. Its text is the attempt's outcome in words, shown on the delivery
//     page, so it says what happened in terms a tenant understands ("no queue is bound to exchange
//     "orders" with routing key "order.paid"") and never carries a credential.
//
// The package destinationtest is the conformance suite every destination runs.
package destination

import (
	"context"
	"net"
	"net/http"
	"net/url"
)

// Destination sends messages to the webhooks whose URL scheme it serves. One Destination serves
// every webhook of its schemes, of every tenant, from many goroutines at once: it is safe for
// concurrent use, and it keeps whatever it shares between sends (connections, channels, producers)
// itself, keyed by what it dials (host and credentials).
type Destination interface {
	// Schemes are the URL schemes it serves, lower case: "amqp", "amqps".
	Schemes() []string
	// Check tells whether u (of one of its schemes) is a URL it can send to, when a webhook is
	// saved: its error, in words that say what to change, refuses the webhook. It does no I/O. The
	// engine checks the hosts against the egress guard before it (private and metadata addresses are
	// refused unless allowed), so Check looks at the rest: the path, the query, what is required.
	Check(u *url.URL) error
	// Send sends m and returns nil once the destination durably has it, or the attempt's failure
	// (see the package doc). ctx ends when the attempt's time is up (Options.Timeout): Send returns
	// by then. It dials every connection with m.Dial, so that a tenant's broker address passes the
	// egress guard like an HTTP endpoint's.
	Send(ctx context.Context, m *Message) error
}

// Message is one attempt of a delivery. The engine makes a new one for each attempt; Send may read
// it, and may set StatusCode and Response, but must not keep it after it returns.
type Message struct {
	// URL is the webhook's URL, credentials included (they are never logged or shown).
	URL *url.URL
	// ID is the webhook-id: the same on every attempt and resend of the delivery. Where the
	// destination has a deduplication key (AMQP message_id, JetStream Nats-Msg-Id, a Kafka record
	// header), it is that key.
	ID string
	// Header holds webhook-id, webhook-timestamp, webhook-signature (Standard Webhooks), Content-Type
	// and the webhook's custom headers, in canonical form; a broker destination sends them as message
	// headers, so that a consumer verifies the message as an HTTP receiver does.
	Header http.Header
	// Body is the Standard Webhooks JSON body {"id","type","timestamp","data"} the signature covers.
	Body []byte
	// EventType, EventID, Tenant and OrderKey are the event's (Tenant and OrderKey may be ""): a
	// destination may route or key by them (a routing key, a Kafka record key).
	EventType, EventID, Tenant, OrderKey string
	// WebhookID is the webhook's id.
	WebhookID string
	// Attempt counts the delivery's attempts, this one included (1 for the first).
	Attempt int
	// Dial opens a network connection through the engine's egress guard: every address a name
	// resolves to is checked before the connect. A destination dials every connection with it (a
	// connection it keeps may be dialed by an earlier message's Dial: every Dial of one Dispatcher
	// applies the same guard). Never nil.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)

	// StatusCode is set by Send when the destination answered with a status: an HTTP destination's
	// response status. 0 otherwise.
	StatusCode int
	// Response is set by Send to what the destination answered, for the delivery page: the start of
	// an HTTP response body, or a broker's receipt ("stream ORDERS, sequence 42"). The engine keeps at
	// most 1 KiB of it.
	Response string
}
