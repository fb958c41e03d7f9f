package webhooks

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// BenchmarkReplayIndexMemory measures the replay index's Redis memory per event (MEMORY USAGE of the
// tenant's index keys, summed over the shards, after minus before), for a tenant with few events per
// shard (zsets kept as listpacks) and with many (skiplists). Entries are what the claim script adds:
// an event id (24 bytes here) scored by its accepted ms. Real Redis only (WEBHOOKS_REDIS_ADDR):
//
//	WEBHOOKS_REDIS_ADDR=127.0.0.1:6379 go test -run '^$' -bench BenchmarkReplayIndexMemory -benchtime 1x .
func BenchmarkReplayIndexMemory(b *testing.B) {
	for _, perShard := range []int{100, 2000} {
		b.Run(fmt.Sprintf("events_per_shard=%d", perShard), func(b *testing.B) {
			tr := newTestRedis(b)
			if tr.mini != nil {
				b.Skip("MEMORY USAGE needs a real Redis (WEBHOOKS_REDIS_ADDR)")
			}
			ctx := context.Background()
			d := newTestDispatcher(b, tr, Options{ReplayIndex: true})
			usage := func() int64 {
				var sum int64
				for s := range d.keys.Shards {
					n, err := tr.rdb.MemoryUsage(ctx, d.keys.Replay(s, "acme"), 0).Result()
					if err != nil && err != redis.Nil {
						require.NoError(b, err)
					}
					sum += n
				}
				return sum
			}
			var perEvent float64
			for range b.N {
				tr.deleteKeys(b)
				before := usage()
				at := time.Now().UnixMilli()
				pipe := tr.rdb.Pipeline()
				for s := range d.keys.Shards {
					for i := range perShard {
						id := fmt.Sprintf("evt_%020d", s*perShard+i)
						pipe.ZAdd(ctx, d.keys.Replay(s, "acme"), redis.Z{Score: float64(at + int64(i)), Member: id})
					}
				}
				_, err := pipe.Exec(ctx)
				require.NoError(b, err)
				perEvent = float64(usage()-before) / float64(perShard*d.keys.Shards)
			}
			b.ReportMetric(perEvent, "bytes/event")
		})
	}
}
