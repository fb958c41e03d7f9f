package natsdest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/internal/testproxy"
	"github.com/smartdrop/webhooks/natsdest"
)

// runWorker runs d's worker until t ends.
func runWorker(t testing.TB, d *webhooks.Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	})
}

// stallLimit is how long waitDelivered waits without any delivery making progress.
const stallLimit = 60 * time.Second

// waitDelivered waits until the deliveries of events to webhook w all succeed and returns them by
// event id. It fails t when one fails for good, or when none succeeds for stallLimit (progress, not
// wall time, bounds the wait).
func waitDelivered(t testing.TB, d *webhooks.Dispatcher, w string, events []string) map[string]*webhooks.Delivery {
	t.Helper()
	ctx := context.Background()
	done := map[string]*webhooks.Delivery{}
	last := time.Now()
	for len(done) < len(events) {
		progress := false
		var waiting *webhooks.Delivery
		for _, id := range events {
			if done[id] != nil {
				continue
			}
			dl, err := d.Deliveries().Find(ctx, w, id)
			if errors.Is(err, webhooks.ErrNotFound) {
				continue
			}
			require.NoError(t, err)
			switch dl.Status {
			case webhooks.StatusSuccess:
				done[id], progress = dl, true
			case webhooks.StatusFailed:
				t.Fatalf("delivery of %s failed: %s (%d attempts)", id, dl.LastError, dl.Attempts)
			default:
				waiting = dl
			}
		}
		if progress {
			last = time.Now()
			continue
		}
		if time.Since(last) > stallLimit {
			var state string
			if waiting != nil {
				state = fmt.Sprintf("; e.g. %s: %s after %d attempts, last error %q", waiting.EventID, waiting.Status, waiting.Attempts, waiting.LastError)
			}
			t.Fatalf("%d of %d deliveries succeeded, none more in %s%s", len(done), len(events), stallLimit, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return done
}

// startProxy is a TCP proxy to the broker, closed when t ends.
func startProxy(t testing.TB, b *broker) *testproxy.Proxy {
	t.Helper()
	p, err := testproxy.Start(b.url.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// proxied is a webhook of a Dispatcher of its own (its worker running) whose URL goes through a
// proxy to a stream of its own: a broker a test can take away.
type proxied struct {
	broker          *broker
	stream, subject string
	proxy           *testproxy.Proxy
	d               *webhooks.Dispatcher
	w               *webhooks.Webhook
}

// newProxied makes a proxied webhook whose retries come after retry each (BreakAfter off), sent
// through wrap's destination when wrap is not nil.
func newProxied(t testing.TB, retry time.Duration, wrap func(*natsdest.Destination, *testproxy.Proxy) webhooks.Destination) *proxied {
	t.Helper()
	p := &proxied{broker: newBroker(t)}
	p.stream, p.subject = p.broker.stream(t)
	p.proxy = startProxy(t, p.broker)
	var dest webhooks.Destination = newDest(t, natsdest.Options{ReconnectWait: 50 * time.Millisecond})
	if wrap != nil {
		dest = wrap(dest.(*natsdest.Destination), p.proxy)
	}
	p.d = newDispatcher(t, miniredis.RunT(t), "nt_"+unique(t), webhooks.Options{AllowPrivateNetworks: true, BreakAfter: -1,
		Timeout: 5 * time.Second, RetrySchedule: shortRetries(60, retry), Destinations: []webhooks.Destination{dest}})
	var err error
	p.w, err = p.d.Webhooks().Create(context.Background(), webhooks.Webhook{URL: p.broker.target(p.subject, p.proxy.Addr()).String(), Events: []string{"*"}})
	require.NoError(t, err)
	runWorker(t, p.d)
	return p
}

// shortRetries is a retry schedule of n delays of d, far inside the streams' duplicate window.
func shortRetries(n int, d time.Duration) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = d
	}
	return s
}

// cutting is a natsdest Destination behind a proxy that cuts the connection at the reply to every
// every-th Send (a publish whose ack is lost): the proxy fails that many publishes.
type cutting struct {
	*natsdest.Destination
	proxy *testproxy.Proxy
	every int64
	sends atomic.Int64
	cuts  atomic.Int64
}

func (c *cutting) Send(ctx context.Context, m *destination.Message) error {
	if c.sends.Add(1)%c.every == 0 {
		c.cuts.Add(1)
		c.proxy.CutNextReply()
	}
	return c.Destination.Send(ctx, m)
}

// redisValues returns every key of mr and its value(s), as text.
func redisValues(t testing.TB, mr *miniredis.Miniredis) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer c.Close()
	out := map[string]string{}
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		typ, err := c.Type(ctx, k).Result()
		require.NoError(t, err)
		var b strings.Builder
		switch typ {
		case "string":
			v, err := c.Get(ctx, k).Result()
			if !errors.Is(err, redis.Nil) {
				require.NoError(t, err)
			}
			b.WriteString(v)
		case "hash":
			m, err := c.HGetAll(ctx, k).Result()
			require.NoError(t, err)
			for f, v := range m {
				b.WriteString(f + "\x00" + v + "\x00")
			}
		case "list":
			m, err := c.LRange(ctx, k, 0, -1).Result()
			require.NoError(t, err)
			b.WriteString(strings.Join(m, "\x00"))
		case "set":
			m, err := c.SMembers(ctx, k).Result()
			require.NoError(t, err)
			b.WriteString(strings.Join(m, "\x00"))
		case "zset":
			m, err := c.ZRange(ctx, k, 0, -1).Result()
			require.NoError(t, err)
			b.WriteString(strings.Join(m, "\x00"))
		case "stream":
			m, err := c.XRange(ctx, k, "-", "+").Result()
			require.NoError(t, err)
			for _, e := range m {
				for f, v := range e.Values {
					fmt.Fprintf(&b, "%s\x00%v\x00", f, v)
				}
			}
		case "none":
		default:
			t.Fatalf("key %s of unexpected type %s", k, typ)
		}
		out[k] = b.String()
	}
	require.NoError(t, iter.Err())
	return out
}

// httpGet is h's answer to GET path.
func httpGet(h http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}
