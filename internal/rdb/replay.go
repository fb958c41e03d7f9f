package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// ReplayEntry is an entry of a tenant's replay index (Keys.Replay): an event id without its tenant,
// and when the event was accepted (ms).
type ReplayEntry struct {
	EventID  string
	Accepted int64
}

// ReadReplayIndex reads at most count entries of a replay index key scored (accepted) in [from,
// until] ms, after the first skip of them, in score order.
func ReadReplayIndex(ctx context.Context, c redis.UniversalClient, key string, from, until, skip, count int64) ([]ReplayEntry, error) {
	zs, err := c.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: key, Start: from, Stop: until, ByScore: true,
		Offset: skip, Count: count}).Result()
	if err != nil {
		return nil, err
	}
	entries := make([]ReplayEntry, len(zs))
	for i, z := range zs {
		id, _ := z.Member.(string)
		entries[i] = ReplayEntry{EventID: id, Accepted: int64(z.Score)}
	}
	return entries, nil
}

// ReadShardEvents reads stored events of one shard (their keys share its slot) in one MGET and
// returns their bodies (EventBody) in the order of keys, nil for an event that has expired.
func ReadShardEvents(ctx context.Context, c redis.UniversalClient, keys []string) ([][]byte, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	stored, err := c.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, err
	}
	bodies := make([][]byte, len(stored))
	for i, v := range stored {
		if raw, ok := v.(string); ok {
			bodies[i] = EventBody(raw)
		}
	}
	return bodies, nil
}
