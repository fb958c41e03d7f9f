package webhooks

// Event shards. Every key of one event's deliveries carries its shard's hash tag, so that every script
// touches one hash slot; the tags are chosen by cluster slot (internal/keyspace), so the shards spread
// evenly over the masters of a Redis Cluster.
//
// The shard count is a property of the keyspace: delivery ids encode the shard (two hex digits) and
// keys its tag. It is stored on first use, under {P:registry}:shards ("<S>", a decimal), and every
// Dispatcher on the prefix reads it once, with the context of the first call that needs it (New does
// no I/O: a Dispatcher made while Redis is down or loading works once Redis answers).

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"

	ks "github.com/smartdrop/webhooks/internal/keyspace"
)

const (
	// DefaultShards is Options.Shards' default for a new keyspace.
	DefaultShards = 64
	// MaxShards bounds Options.Shards: a delivery id holds its shard in two hex digits.
	MaxShards = ks.MaxShards
)

// layout is a keyspace's shard count and tags, shared by every copy of the keyspace. A layout from
// newLazyKeyspace is empty until load reads it; shards and tags are read only after load (or of a
// layout built whole, newKeyspaceOf in the tests).
type layout struct {
	ks.Layout // read only after load (or of a layout built whole, newKeyspaceOf in the tests)

	want   int // Options.Shards: 0 for whatever is stored
	loaded atomic.Bool
	mu     sync.Mutex // held by the load in progress
}

// newLazyKeyspace is the keyspace of prefix, its layout read by the first load. want is
// Options.Shards (0: whatever is stored, DefaultShards in a new keyspace).
func newLazyKeyspace(prefix string, want int) keyspace {
	return keyspace{prefix: prefix, layout: &layout{want: want}}
}

// load reads the keyspace's shard count on rdb (storing it on first use) unless it has been read: one
// round trip per Dispatcher, by the first call that needs it, with that call's context. A failed read
// is tried again by the next call. A stored count that differs from a set Options.Shards is refused
// with ErrInvalidOptions.
func (k keyspace) load(ctx context.Context, client redis.UniversalClient) error {
	if k.loaded.Load() {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.loaded.Load() {
		return nil
	}
	shards, err := readLayout(ctx, client, k.prefix, k.want)
	if err != nil {
		return err
	}
	k.Layout = ks.NewLayout(k.prefix, shards)
	k.loaded.Store(true)
	return nil
}

// readLayout reads the shard count stored for prefix, storing it on first use: want, or DefaultShards
// when want is 0; a stored count that differs from a set want is refused with ErrInvalidOptions.
func readLayout(ctx context.Context, client redis.UniversalClient, prefix string, want int) (int, error) {
	fresh := want
	if fresh == 0 {
		fresh = DefaultShards
	}
	base := keyspace{prefix: prefix}
	v, err := rdb.ShardCount.Run(ctx, client, []string{base.shardsKey()}, ks.FormatCount(fresh)).Text()
	if err != nil {
		return 0, fmt.Errorf("webhooks: read the keyspace's shard count: %w", err)
	}
	shards, err := ks.ParseCount(v)
	if err != nil {
		return 0, err
	}
	if want != 0 && want != shards {
		return 0, fmt.Errorf("%w: Shards is %d but KeyPrefix %q holds %d shards (fixed once used)", ErrInvalidOptions, want, prefix, shards)
	}
	return shards, nil
}

// shardsKey holds the keyspace's shard count.
func (k keyspace) shardsKey() string { return k.registryTag() + ":shards" }
