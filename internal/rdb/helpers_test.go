package rdb

import (
	"context"
	"crypto/rand"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// The package's tests run on the Redis the root's tests use: miniredis, unless WEBHOOKS_REDIS_ADDR or
// WEBHOOKS_REDIS_CLUSTER names a real one (their keys are under the test's own prefix).

var echoScript = redis.NewScript(`return ARGV[1]`)

// testRedis is one test's Redis: a client of it, and a key prefix of the test's own.
type testRedis struct {
	mini   *miniredis.Miniredis // nil on a real Redis
	rdb    redis.UniversalClient
	prefix string
}

func newTestRedis(t testing.TB) *testRedis {
	t.Helper()
	tr := &testRedis{prefix: "wht_rdb_" + rand.Text()[:8]}
	if os.Getenv("WEBHOOKS_REDIS_CLUSTER") == "" && os.Getenv("WEBHOOKS_REDIS_ADDR") == "" {
		tr.mini = miniredis.RunT(t)
	}
	tr.rdb = tr.newClient(t)
	return tr
}

// newClient is a new client of the test's Redis, closed when the test ends.
func (tr *testRedis) newClient(t testing.TB) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	switch {
	case tr.mini != nil:
		c = redis.NewClient(&redis.Options{Addr: tr.mini.Addr()})
	case os.Getenv("WEBHOOKS_REDIS_CLUSTER") != "":
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(os.Getenv("WEBHOOKS_REDIS_CLUSTER"), ",")})
	default:
		c = redis.NewClient(&redis.Options{Addr: os.Getenv("WEBHOOKS_REDIS_ADDR")})
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// passHook is a go-redis hook that passes everything through; test hooks embed it.
type passHook struct{}

func (passHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (passHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (passHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// roundTrips counts the client's round trips (a pipeline is one), and can hold them.
type roundTrips struct {
	passHook
	n    atomic.Int32
	hold atomic.Pointer[chan struct{}]
}

// isHandshake reports whether a command is part of go-redis's setup of a new connection (HELLO,
// CLIENT SETINFO), which a call pays only when the pool grows.
func isHandshake(c redis.Cmder) bool { return c.Name() == "hello" || c.Name() == "client" }

func (h *roundTrips) wait() {
	if c := h.hold.Load(); c != nil {
		<-*c
	}
}

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isHandshake(cmd) {
			return next(ctx, cmd)
		}
		h.n.Add(1)
		h.wait()
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return !isHandshake(c) }) {
			return next(ctx, cmds)
		}
		h.n.Add(1)
		h.wait()
		return next(ctx, cmds)
	}
}
