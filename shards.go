package webhooks

// Event shards. Every key of one event's deliveries carries its shard's hash tag, so that every script
// touches one hash slot; the tags are chosen by cluster slot (internal/rdb), so the shards spread
// evenly over the masters of a Redis Cluster.
//
// The shard count is a property of the keyspace: delivery ids encode the shard (two hex digits) and
// keys its tag. It is stored on first use, under {P:registry}:shards ("<S>", a decimal), and every
// Dispatcher on the prefix reads it once, with the context of the first call that needs it (New does
// no I/O: a Dispatcher made while Redis is down or loading works once Redis answers).

import (
	"context"
	"errors"
	"fmt"

	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
)

const (
	// DefaultShards is Options.Shards' default for a new keyspace.
	DefaultShards = 64
	// MaxShards bounds Options.Shards: a delivery id holds its shard in two hex digits.
	MaxShards = rdb.MaxShards
)

// loadKeys reads the key prefix's shard count unless it has been read (rdb.Keys.Load); a stored count
// other than Options.Shards wraps ErrInvalidOptions.
func loadKeys(ctx context.Context, k rdb.Keys, client redis.UniversalClient) error {
	err := k.Load(ctx, client)
	if errors.Is(err, rdb.ErrShardCount) {
		return fmt.Errorf("%w: Shards: %w", ErrInvalidOptions, err)
	}
	return err
}
