// Package destinationtest is the conformance suite of a destination.Destination: what every
// destination must do for the engine's guarantees to hold through it. A destination module runs it
// against a real broker (or an in-process one) from a test:
//
//	func TestConformance(t *testing.T) {
//		destinationtest.Run(t, destinationtest.Harness{New: …, Target: …, Receive: …})
//	}
//
// It imports the standard library only.
package destinationtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/destination"
)

// Received is a message as a consumer of the destination got it.
type Received struct {
	// ID is the message's deduplication key as the consumer sees it (AMQP message_id,
	// Nats-Msg-Id, the Kafka record's webhook-id header).
	ID string
	// Header holds the message's headers, in canonical form (webhook-id, webhook-timestamp,
	// webhook-signature, custom headers).
	Header http.Header
	// Body is the message body.
	Body []byte
}

// Harness is what the suite needs of a destination under test. New, Target and Receive are
// required.
type Harness struct {
	// New returns a new destination under test; the suite closes it (when it has a Close method)
	// when the test ends.
	New func(t *testing.T) destination.Destination
	// Target returns a new URL to send to, whose messages only this test reads (a queue, a
	// subject, a topic of its own), made ready to receive.
	Target func(t *testing.T) *url.URL
	// Receive returns the messages that reached u, in the order the consumer got them, once n have
	// arrived or ctx has ended; each call returns those that arrived since the last call for u.
	Receive func(ctx context.Context, t *testing.T, u *url.URL, n int) []Received
	// Missing, when set, returns a URL whose target does not exist (no queue bound to the routing
	// key, no stream for the subject, no topic): Send must fail, in words.
	Missing func(t *testing.T) *url.URL
	// Unreachable, when set, returns a URL of the destination on which nothing listens: Send must fail
	// within its context.
	Unreachable func(t *testing.T) *url.URL
	// Invalid are URLs of the destination's schemes that Check must refuse.
	Invalid []string
	// Dedup says that the destination drops a message whose ID it has taken already (a JetStream
	// duplicate window): a second Send of an ID reaches no consumer.
	Dedup bool
	// Timeout bounds each Send (default 10s).
	Timeout time.Duration
}

// Run runs the suite as subtests of t.
func Run(t *testing.T, h Harness) {
	if h.New == nil || h.Target == nil || h.Receive == nil {
		t.Fatal("destinationtest: Harness.New, Target and Receive are required")
	}
	if h.Timeout <= 0 {
		h.Timeout = 10 * time.Second
	}
	t.Run("Schemes", func(t *testing.T) { testSchemes(t, h) })
	t.Run("Check", func(t *testing.T) { testCheck(t, h) })
	t.Run("SendDelivers", func(t *testing.T) { testSendDelivers(t, h) })
	t.Run("ConcurrentSends", func(t *testing.T) { testConcurrentSends(t, h) })
	t.Run("DialsThroughTheGuard", func(t *testing.T) { testDialsThroughTheGuard(t, h) })
	t.Run("CanceledContext", func(t *testing.T) { testCanceledContext(t, h) })
	if h.Missing != nil {
		t.Run("MissingTarget", func(t *testing.T) { testMissing(t, h) })
	}
	if h.Unreachable != nil {
		t.Run("Unreachable", func(t *testing.T) { testUnreachable(t, h) })
	}
	if h.Dedup {
		t.Run("Dedup", func(t *testing.T) { testDedup(t, h) })
	}
}

// newDestination is h.New, closed when t ends.
func newDestination(t *testing.T, h Harness) destination.Destination {
	d := h.New(t)
	if c, ok := d.(interface{ Close() error }); ok {
		t.Cleanup(func() {
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	return d
}

// Message returns a message to u as the engine makes one: id as its webhook-id, body as its body,
// Standard Webhooks headers (the signature a fixed stand-in: the suite checks it arrives as sent) and
// the guard's dialer stood in for by a plain one.
func Message(u *url.URL, id string, body []byte) *destination.Message {
	h := http.Header{}
	h.Set("Webhook-Id", id)
	h.Set("Webhook-Timestamp", strconv.FormatInt(time.Now().Unix(), 10))
	h.Set("Webhook-Signature", "v1,"+id+"-signature")
	h.Set("Content-Type", "application/json")
	h.Set("X-Custom", "custom value")
	var d net.Dialer
	return &destination.Message{URL: u, ID: id, Header: h, Body: body, EventType: "test.sent", EventID: "evt_" + id,
		WebhookID: "wh_conformance", Attempt: 1, Dial: d.DialContext}
}

func testSchemes(t *testing.T, h Harness) {
	d := newDestination(t, h)
	schemes := d.Schemes()
	if len(schemes) == 0 {
		t.Fatal("Schemes() is empty")
	}
	for _, s := range schemes {
		if s == "" || s != strings.ToLower(s) {
			t.Errorf("scheme %q: schemes are lower case and not empty", s)
		}
	}
}

func testCheck(t *testing.T, h Harness) {
	d := newDestination(t, h)
	u := h.Target(t)
	if err := d.Check(u); err != nil {
		t.Errorf("Check(%s) refused the suite's target: %v", u.Redacted(), err)
	}
	for _, raw := range h.Invalid {
		bad, err := url.Parse(raw)
		if err != nil {
			continue // not a URL at all: the engine refuses it before Check
		}
		if err := d.Check(bad); err == nil {
			t.Errorf("Check(%q) = nil, want an error that says what to change", raw)
		} else if strings.TrimSpace(err.Error()) == "" {
			t.Errorf("Check(%q): an error without words", raw)
		}
	}
}

// send is d.Send within the harness's timeout.
func send(t *testing.T, h Harness, d destination.Destination, m *destination.Message) error {
	ctx, cancel := context.WithTimeout(context.Background(), h.Timeout)
	defer cancel()
	return d.Send(ctx, m)
}

// receive is h.Receive of n messages within a deadline.
func receive(t *testing.T, h Harness, u *url.URL, n int) []Received {
	ctx, cancel := context.WithTimeout(context.Background(), 4*h.Timeout)
	defer cancel()
	return h.Receive(ctx, t, u, n)
}

func testSendDelivers(t *testing.T, h Harness) {
	d := newDestination(t, h)
	u := h.Target(t)
	m := Message(u, "msg_delivers", []byte(`{"id":"evt_1","type":"test.sent","timestamp":"2026-01-01T00:00:00Z","data":{"n":1}}`))
	if err := send(t, h, d, m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := receive(t, h, u, 1)
	if len(got) != 1 {
		t.Fatalf("received %d messages, want 1", len(got))
	}
	r := got[0]
	if r.ID != m.ID {
		t.Errorf("received id %q, want the webhook-id %q", r.ID, m.ID)
	}
	if string(r.Body) != string(m.Body) {
		t.Errorf("received body %q, want %q", r.Body, m.Body)
	}
	for _, name := range []string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature", "X-Custom"} {
		if r.Header.Get(name) != m.Header.Get(name) {
			t.Errorf("header %s: received %q, want %q", name, r.Header.Get(name), m.Header.Get(name))
		}
	}
}

func testConcurrentSends(t *testing.T, h Harness) {
	const senders, each = 16, 16
	d := newDestination(t, h)
	u := h.Target(t)
	var wg sync.WaitGroup
	errs := make(chan error, senders*each)
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("msg_%d_%d", g, i)
				if err := send(t, h, d, Message(u, id, []byte(`{"n":"`+id+`"}`))); err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Send: %v", err)
	}
	got := receive(t, h, u, senders*each)
	seen := map[string]int{}
	for _, r := range got {
		seen[r.ID]++
		if want := `{"n":"` + r.ID + `"}`; string(r.Body) != want {
			t.Errorf("message %s: body %q, want %q", r.ID, r.Body, want)
		}
	}
	if len(seen) != senders*each {
		t.Errorf("received %d distinct messages of %d sent", len(seen), senders*each)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("message %s received %d times", id, n)
		}
	}
}

func testDialsThroughTheGuard(t *testing.T, h Harness) {
	u := h.Target(t)
	blocked := errors.New("destinationtest: the egress guard refused this address")
	t.Run("refused", func(t *testing.T) {
		d := newDestination(t, h)
		m := Message(u, "msg_refused", []byte(`{}`))
		var dials atomic.Int32
		m.Dial = func(context.Context, string, string) (net.Conn, error) {
			dials.Add(1)
			return nil, blocked
		}
		err := send(t, h, d, m)
		if err == nil {
			t.Fatal("Send succeeded although every dial was refused: it did not dial through Message.Dial")
		}
		if dials.Load() == 0 {
			t.Errorf("Send failed (%v) without calling Message.Dial", err)
		}
	})
	t.Run("used", func(t *testing.T) {
		d := newDestination(t, h)
		m := Message(u, "msg_dialed", []byte(`{}`))
		var dials atomic.Int32
		plain := m.Dial
		m.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
			dials.Add(1)
			return plain(ctx, network, address)
		}
		if err := send(t, h, d, m); err != nil {
			t.Fatalf("Send: %v", err)
		}
		if dials.Load() == 0 {
			t.Error("a new destination sent without calling Message.Dial")
		}
		if got := receive(t, h, u, 1); len(got) != 1 || got[0].ID != m.ID {
			t.Errorf("received %v, want the one message %s", got, m.ID)
		}
	})
}

func testCanceledContext(t *testing.T, h Harness) {
	d := newDestination(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	err := d.Send(ctx, Message(h.Target(t), "msg_canceled", []byte(`{}`)))
	if err == nil {
		t.Error("Send with an ended context returned nil")
	}
	if el := time.Since(start); el > h.Timeout {
		t.Errorf("Send with an ended context took %s", el)
	}
}

func testMissing(t *testing.T, h Harness) {
	d := newDestination(t, h)
	u := h.Missing(t)
	err := send(t, h, d, Message(u, "msg_missing", []byte(`{}`)))
	if err == nil {
		t.Fatalf("Send to %s, whose target does not exist, returned nil", u.Redacted())
	}
	if k, _ := destination.Classify(err); k != destination.Unavailable {
		t.Errorf("Send to a missing target: kind %s, want unavailable (retried, counted by the breaker)", k)
	}
	checkWords(t, err, u)
}

func testUnreachable(t *testing.T, h Harness) {
	d := newDestination(t, h)
	u := h.Unreachable(t)
	start := time.Now()
	err := send(t, h, d, Message(u, "msg_unreachable", []byte(`{}`)))
	if err == nil {
		t.Fatalf("Send to %s, where nothing listens, returned nil", u.Redacted())
	}
	if el := time.Since(start); el > h.Timeout+time.Second {
		t.Errorf("Send to an unreachable destination took %s, past its context's %s", el, h.Timeout)
	}
	if k, _ := destination.Classify(err); k != destination.Unavailable {
		t.Errorf("Send to an unreachable destination: kind %s, want unavailable", k)
	}
	checkWords(t, err, u)
}

// checkWords fails t when err has no words or carries u's password.
func checkWords(t *testing.T, err error, u *url.URL) {
	t.Helper()
	if strings.TrimSpace(err.Error()) == "" {
		t.Error("the failure has no words")
	}
	if p, ok := u.User.Password(); ok && p != "" && strings.Contains(err.Error(), p) {
		t.Errorf("the failure %q carries the URL's password", err)
	}
}

func testDedup(t *testing.T, h Harness) {
	d := newDestination(t, h)
	u := h.Target(t)
	m := Message(u, "msg_twice", []byte(`{"n":1}`))
	for range 2 {
		if err := send(t, h, d, Message(u, m.ID, m.Body)); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	if err := send(t, h, d, Message(u, "msg_after", []byte(`{"n":2}`))); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := receive(t, h, u, 2)
	ids := make([]string, len(got))
	for i, r := range got {
		ids[i] = r.ID
	}
	if len(got) != 2 || got[0].ID != m.ID || got[1].ID != "msg_after" {
		t.Errorf("received %v, want [%s msg_after]: a second Send of one ID must reach no consumer", ids, m.ID)
	}
}
