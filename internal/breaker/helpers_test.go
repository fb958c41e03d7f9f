package breaker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// testRedis is the Redis a test runs on, as the root package's tests choose it: embedded miniredis by
// default, a real server when WEBHOOKS_REDIS_ADDR is set, a Redis Cluster when WEBHOOKS_REDIS_CLUSTER
// lists its seeds. Each test gets its own key prefix, so the suite can share a real Redis.
type testRedis struct {
	rdb    redis.UniversalClient
	prefix string
	mini   *miniredis.Miniredis // nil on a real Redis
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

// newClient opens a new client on the test's Redis (for tests that need several clients).
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

func newTestRedis(t testing.TB) *testRedis {
	t.Helper()
	name := nonWord.ReplaceAllString(t.Name(), "_")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	tr := &testRedis{prefix: "whtb_" + name + "_" + hex.EncodeToString(suffix)}
	if os.Getenv("WEBHOOKS_REDIS_CLUSTER") == "" && os.Getenv("WEBHOOKS_REDIS_ADDR") == "" {
		tr.mini = miniredis.RunT(t)
	}
	tr.rdb = tr.newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, tr.rdb.Ping(ctx).Err(), "test Redis must answer")
	if tr.mini == nil {
		t.Cleanup(func() { tr.deleteKeys(t) })
	}
	return tr
}

// deleteKeys removes every key of the test's prefix from a real Redis.
func (tr *testRedis) deleteKeys(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sweep := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, "{"+tr.prefix+":*", 500).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		return iter.Err()
	}
	var err error
	switch c := tr.rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, sweep)
	case *redis.Client:
		err = sweep(ctx, c)
	}
	if err != nil {
		t.Logf("cleanup of %s: %v", tr.prefix, err)
	}
}

// passHook is a redis.Hook that changes nothing, for hooks to embed.
type passHook struct{}

func (passHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (passHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (passHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
