package rdb

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// MaxmemoryPolicy reads Redis's maxmemory-policy from INFO memory ("" when it is not there).
func MaxmemoryPolicy(ctx context.Context, c redis.UniversalClient) (string, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "maxmemory_policy:"); ok {
			return v, nil
		}
	}
	return "", nil
}

// Ping asks Redis whether it answers.
func Ping(ctx context.Context, c redis.UniversalClient) error { return c.Ping(ctx).Err() }
