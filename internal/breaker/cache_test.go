package breaker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks/internal/types"
	"github.com/stretchr/testify/require"
)

// hmgetHook counts HMGETs, and runs a function before each.
type hmgetHook struct {
	passHook
	n      *atomic.Int32
	before func()
}

func (h hmgetHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "hmget" {
			h.n.Add(1)
			if h.before != nil {
				h.before()
			}
		}
		return next(ctx, cmd)
	}
}

func TestCircuitCache(t *testing.T) {
	t.Parallel()
	tr, s := newTestCircuits(t)
	ctx := context.Background()
	var hmgets atomic.Int32
	var during func()
	client := tr.newClient(t)
	client.AddHook(hmgetHook{n: &hmgets, before: func() {
		if during != nil {
			during()
		}
	}})
	s.rdb = client
	cache := newCache()
	get := func(now time.Time, ids ...string) map[string]types.Health {
		t.Helper()
		hs, err := cache.get(ctx, s, now, ids)
		require.NoError(t, err)
		require.Len(t, hs, len(ids))
		byID := map[string]types.Health{}
		for i, id := range ids {
			byID[id] = hs[i]
		}
		return byID
	}

	require.Equal(t, types.CircuitClosed, get(circuitT0, "wh_1", "wh_2")["wh_1"].State)
	require.EqualValues(t, 1, hmgets.Load(), "one HMGET for both")
	failing := circuit{failures: 7, since: circuitT0.UnixMilli()}.encode()
	require.NoError(t, client.HSet(ctx, s.key, "wh_1", failing, "wh_2", failing).Err())
	hs := get(circuitAt(CacheTTL-time.Millisecond), "wh_1", "wh_2")
	require.Zero(t, hs["wh_1"].ConsecutiveFailures, "cached")
	require.EqualValues(t, 1, hmgets.Load(), "no HMGET within the TTL")

	hs = get(circuitAt(CacheTTL), "wh_1", "wh_3")
	require.Equal(t, 7, hs["wh_1"].ConsecutiveFailures, "read again after the TTL")
	require.EqualValues(t, 2, hmgets.Load())
	require.Zero(t, get(circuitAt(CacheTTL+time.Millisecond), "wh_3")["wh_3"].ConsecutiveFailures)
	require.EqualValues(t, 2, hmgets.Load(), "wh_3 cached by the read before")

	// A put is seen at once, and a read that overlaps a put does not replace it.
	open := types.Health{WebhookID: "wh_1", State: types.CircuitOpen, ConsecutiveFailures: 8}
	cache.put(open, circuitAt(time.Second))
	require.Equal(t, open, get(circuitAt(time.Second), "wh_1")["wh_1"])
	during = func() { cache.put(open, circuitAt(2*time.Second)) }
	require.Equal(t, open, get(circuitAt(2*time.Second), "wh_1")["wh_1"])
	during = nil
	require.Equal(t, open, get(circuitAt(2*time.Second+time.Millisecond), "wh_1")["wh_1"])
	require.Equal(t, 7, get(circuitAt(3*time.Second), "wh_1")["wh_1"].ConsecutiveFailures, "Redis after the TTL")
}

// TestCircuitCacheInIDsOrder: get answers each id at its own index, whether cached or read, an id
// asked twice included.
func TestCircuitCacheInIDsOrder(t *testing.T) {
	t.Parallel()
	tr, s := newTestCircuits(t)
	ctx := context.Background()
	failing := circuit{failures: 3, since: circuitT0.UnixMilli()}.encode()
	require.NoError(t, tr.rdb.HSet(ctx, s.key, "wh_3", failing).Err())
	cache := newCache()
	open := types.Health{WebhookID: "wh_1", State: types.CircuitOpen, ConsecutiveFailures: 8}
	cache.put(open, circuitT0)

	ids := []string{"wh_3", "wh_1", "wh_2", "wh_3"}
	hs, err := cache.get(ctx, s, circuitT0, ids)
	require.NoError(t, err)
	require.Len(t, hs, len(ids))
	require.Equal(t, open, hs[1], "cached")
	for _, i := range []int{0, 3} {
		require.Equal(t, "wh_3", hs[i].WebhookID, "read, at index %d", i)
		require.Equal(t, 3, hs[i].ConsecutiveFailures, "read, at index %d", i)
	}
	require.Zero(t, hs[2].ConsecutiveFailures, "read: none stored")
	require.Equal(t, "wh_2", hs[2].WebhookID)
}

func TestCircuitCacheConcurrent(t *testing.T) {
	t.Parallel()
	_, s := newTestCircuits(t)
	cache := newCache()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				now := circuitAt(time.Duration(j) * 100 * time.Millisecond)
				if i%2 == 0 {
					cache.put(types.Health{WebhookID: fmt.Sprint("wh_", j%4), State: types.CircuitOpen}, now)
					continue
				}
				_, err := cache.get(context.Background(), s, now, []string{"wh_0", "wh_1", "wh_2", "wh_3"})
				require.NoError(t, err)
			}
		})
	}
	wg.Wait()
}
