package ratelimit

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// testRedis is the Redis a test runs on, as the root package's tests choose it: embedded miniredis by
// default, a real server when WEBHOOKS_REDIS_ADDR is set, a Redis Cluster when WEBHOOKS_REDIS_CLUSTER
// lists its seeds. Each test gets a limiter key of its own, deleted when it ends.
type testRedis struct {
	rdb  redis.UniversalClient
	key  string               // the test's limiter
	mini *miniredis.Miniredis // nil on a real Redis
}

func newTestRedis(t *testing.T) *testRedis {
	t.Helper()
	tr := &testRedis{key: rdb.KeysOf("wht_rate_"+strings.ToLower(rand.Text()[:8]), 1).Rate("wh_1")}
	if os.Getenv("WEBHOOKS_REDIS_CLUSTER") == "" && os.Getenv("WEBHOOKS_REDIS_ADDR") == "" {
		tr.mini = miniredis.RunT(t)
	}
	tr.rdb = tr.newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, tr.rdb.Ping(ctx).Err(), "test Redis must answer")
	if tr.mini == nil {
		t.Cleanup(func() { _ = tr.rdb.Del(context.Background(), tr.key).Err() }) // before the client closes
	}
	return tr
}

// newClient opens a new client on the test's Redis (for tests that need several clients).
func (tr *testRedis) newClient(t *testing.T) redis.UniversalClient {
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
