package natsdest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/natsdest"
)

// natsURL is the NATS server with JetStream the tests run against (WEBHOOKS_NATS_URL). Without it a
// test skips, except in CI (CI set), where it fails: CI must run them.
func natsURL(t testing.TB) *url.URL {
	t.Helper()
	raw := os.Getenv("WEBHOOKS_NATS_URL")
	if raw == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("WEBHOOKS_NATS_URL is not set in CI: the natsdest tests need NATS with JetStream")
		}
		t.Skip("needs NATS with JetStream: set WEBHOOKS_NATS_URL (e.g. nats://127.0.0.1:4222)")
	}
	u, err := url.Parse(raw)
	require.NoError(t, err, "WEBHOOKS_NATS_URL")
	return u
}

// broker is the test's view of the machine's NATS: an admin connection that makes streams and reads
// what reached them.
type broker struct {
	url *url.URL
	nc  *nats.Conn
	js  jetstream.JetStream
}

// newBroker connects to WEBHOOKS_NATS_URL, closed when t ends.
func newBroker(t testing.TB) *broker {
	t.Helper()
	u := natsURL(t)
	nc, err := nats.Connect(u.String(), nats.Name("natsdest tests"), nats.Timeout(10*time.Second))
	require.NoError(t, err, "connect to WEBHOOKS_NATS_URL")
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return &broker{url: u, nc: nc, js: js}
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

// unique is a name of t's own: its name's end and random hex, of letters, digits and _.
func unique(t testing.TB) string {
	name := strings.Trim(nonWord.ReplaceAllString(t.Name(), "_"), "_")
	if len(name) > 32 {
		name = name[len(name)-32:]
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return name + "_" + hex.EncodeToString(b)
}

// createStream makes the stream cfg names on js, through retryStoreFailure.
func createStream(ctx context.Context, t testing.TB, js jetstream.JetStream, cfg jetstream.StreamConfig) (s jetstream.Stream, err error) {
	t.Helper()
	err = retryStoreFailure(ctx, t, "create stream "+cfg.Name, func() (err error) {
		s, err = js.CreateStream(ctx, cfg)
		return err
	})
	return s, err
}

// retryStoreFailure runs f, which makes a stream. A NATS server sometimes fails to create a stream's
// file store and answers only "error creating store for stream" (JetStream error 10049; the cause goes
// to its own log): a fault of the machine's server, not of natsdest, that CI met once in dozens of runs.
// retryStoreFailure runs f again then, at most 4 more times and 200 ms more apart each time, and logs
// each try; any other error is returned at once.
func retryStoreFailure(ctx context.Context, t testing.TB, what string, f func() error) error {
	t.Helper()
	for try := 1; ; try++ {
		err := f()
		if !isStoreFailure(err) || try == 5 {
			return err
		}
		t.Logf("%s, try %d: %v; trying again", what, try, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (after %v)", what, ctx.Err(), err)
		case <-time.After(time.Duration(try) * 200 * time.Millisecond):
		}
	}
}

// isStoreFailure reports whether err is the NATS server's "error creating store for stream".
func isStoreFailure(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeStreamStoreFailed
}

// errCodeStreamStoreFailed is JetStream's error code for a stream whose store the server could not
// create (nats.go names no constant for it).
const errCodeStreamStoreFailed jetstream.ErrorCode = 10049

// dedupWindow is the duplicate window of the tests' streams: longer than any retry delay they use.
const dedupWindow = 2 * time.Minute

// stream makes a stream of t's own that takes one subject of t's own, deleted when t ends, and
// returns its name and subject.
func (b *broker) stream(t testing.TB) (name, subject string) {
	t.Helper()
	u := unique(t)
	name, subject = "WH_"+strings.ToUpper(u), "wh."+strings.ToLower(u)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := createStream(ctx, t, b.js, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Duplicates: dedupWindow,
		Storage: jetstream.FileStorage, MaxAge: time.Hour})
	require.NoError(t, err, "create stream %s", name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		js := b.js
		if b.nc.IsClosed() { // a test closed it to count goroutines
			nc, err := nats.Connect(b.url.String(), nats.Timeout(10*time.Second))
			if err != nil {
				t.Errorf("delete stream %s: %v", name, err)
				return
			}
			defer nc.Close()
			js, _ = jetstream.New(nc)
		}
		if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("delete stream %s: %v", name, err)
		}
	})
	return name, subject
}

// target is the URL of subject on the broker (its credentials, if any), or on host when not "".
func (b *broker) target(subject, host string) *url.URL {
	u := *b.url
	if host != "" {
		u.Host = host
	}
	u.Path = "/" + subject
	return &u
}

// count is the number of messages in stream.
func (b *broker) count(t testing.TB, stream string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := b.js.Stream(ctx, stream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	return info.State.Msgs
}

// read returns the messages of stream from sequence from on, once there are at least n of them or ctx
// has ended, in stream order.
func (b *broker) read(ctx context.Context, t testing.TB, stream string, from uint64, n int) []*jetstream.RawStreamMsg {
	t.Helper()
	s, err := b.js.Stream(ctx, stream)
	require.NoError(t, err)
	var out []*jetstream.RawStreamMsg
	next := from
	for {
		info, err := s.Info(ctx)
		if err != nil {
			return out // ctx ended
		}
		for ; next <= info.State.LastSeq; next++ {
			m, err := s.GetMsg(ctx, next)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			if err != nil {
				return out
			}
			out = append(out, m)
		}
		if len(out) >= n {
			return out
		}
		select {
		case <-ctx.Done():
			return out
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// newDest is a natsdest Destination of opts, closed when t ends.
func newDest(t testing.TB, opts natsdest.Options) *natsdest.Destination {
	t.Helper()
	d, err := natsdest.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

// freeAddr is a loopback address on which nothing listens.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// newDispatcher is a Dispatcher on mr (a client of its own) with opts, AllowPrivateNetworks set
// unless blocked, and prefix as its key prefix.
func newDispatcher(t testing.TB, mr *miniredis.Miniredis, prefix string, opts webhooks.Options) *webhooks.Dispatcher {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	opts.KeyPrefix = prefix
	d, err := webhooks.New(rdb, opts)
	require.NoError(t, err)
	return d
}
