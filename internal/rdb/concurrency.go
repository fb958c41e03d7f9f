package rdb

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// TakeConcurrencySlot takes, for the holder token, one of the limit slots of a webhook's MaxConcurrency
// (the TakeConcurrency script), held for hold at most; it reports whether one was free.
func TakeConcurrencySlot(ctx context.Context, c redis.UniversalClient, keys Keys, webhookID string, limit int, hold time.Duration, token string) (bool, error) {
	n, err := TakeConcurrency.Run(ctx, c, []string{keys.Concurrency(webhookID)}, limit, max(hold.Milliseconds(), 1), token).Int()
	return n == 1, err
}

// ReleaseConcurrencySlot gives back the slot token holds of a webhook's MaxConcurrency.
func ReleaseConcurrencySlot(ctx context.Context, c redis.UniversalClient, keys Keys, webhookID, token string) error {
	return c.ZRem(ctx, keys.Concurrency(webhookID), token).Err()
}
