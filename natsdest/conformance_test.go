package natsdest_test

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/destination/destinationtest"
	"github.com/smartdrop/webhooks/natsdest"
)

// TestConformance runs the destination conformance suite against the machine's NATS: every target a
// stream of its own, Missing a subject no stream takes, Unreachable a port nothing listens on, and
// the duplicate window's dedup of a second Send of one webhook-id.
func TestConformance(t *testing.T) {
	t.Parallel()
	b := newBroker(t)
	var mu sync.Mutex
	streams := map[string]string{} // subject -> stream
	next := map[string]uint64{}    // subject -> next sequence to read
	destinationtest.Run(t, destinationtest.Harness{
		New: func(t *testing.T) destination.Destination {
			d, err := natsdest.New(natsdest.Options{})
			require.NoError(t, err)
			return d
		},
		Target: func(t *testing.T) *url.URL {
			name, subject := b.stream(t)
			mu.Lock()
			streams[subject], next[subject] = name, 1
			mu.Unlock()
			return b.target(subject, "")
		},
		Receive: func(ctx context.Context, t *testing.T, u *url.URL, n int) []destinationtest.Received {
			subject := u.Path[1:]
			mu.Lock()
			name, from := streams[subject], next[subject]
			mu.Unlock()
			msgs := b.read(ctx, t, name, from, n)
			out := make([]destinationtest.Received, len(msgs))
			for i, m := range msgs {
				out[i] = destinationtest.Received{ID: m.Header.Get("Nats-Msg-Id"), Header: http.Header(m.Header), Body: m.Data}
				from = m.Sequence + 1
			}
			mu.Lock()
			next[subject] = from
			mu.Unlock()
			return out
		},
		Missing: func(t *testing.T) *url.URL {
			return b.target("wh.nostream."+unique(t), "")
		},
		Unreachable: func(t *testing.T) *url.URL {
			return b.target("wh.unreachable", freeAddr(t))
		},
		Invalid: []string{
			"nats://127.0.0.1:4222",
			"nats://127.0.0.1:4222/",
			"nats://127.0.0.1:4222/orders.*",
			"nats://127.0.0.1:4222/orders.>",
			"nats://127.0.0.1:4222/orders..paid",
			"nats://127.0.0.1:4222/.orders",
			"nats://127.0.0.1:4222/orders%20paid",
			"nats://127.0.0.1:4222/orders?stream=ORDERS",
			"nats://127.0.0.1:4222/orders#x",
			"nats://127.0.0.1:4222/$JS.API.STREAM.DELETE.ORDERS",
			"tls://127.0.0.1:4222/_INBOX.x",
		},
		Dedup: true,
	})
}
