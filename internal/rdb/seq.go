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

// SeqPosition is where delivery id is in its order key's sequence (Keys.Seq) in shard, 0 for the head;
// found is false when it is not in it.
func SeqPosition(ctx context.Context, c redis.UniversalClient, k Keys, shard int, webhookID, orderKey, id string) (pos int64, found bool, err error) {
	pos, err = c.LPos(ctx, k.Seq(shard, webhookID, orderKey), id, redis.LPosArgs{}).Result()
	if errors.Is(err, redis.Nil) {
		return -1, false, nil
	}
	return pos, err == nil, err
}
