package rdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// ReadSeq reads, in one round trip, an order key's sequence (Keys.Seq) in a shard: its length and the
// first n delivery ids, head first.
func ReadSeq(ctx context.Context, c redis.UniversalClient, k Keys, shard int, webhookID, orderKey string, n int) (length int64, ids []string, err error) {
	seq := k.Seq(shard, webhookID, orderKey)
	pipe := c.Pipeline()
	l, r := pipe.LLen(ctx, seq), pipe.LRange(ctx, seq, 0, int64(n)-1)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, nil, fmt.Errorf("webhooks: read the order key %q of %s: %w", orderKey, webhookID, err)
	}
	return l.Val(), r.Val(), nil
}
