package webhooks

// Event shards. Every key of one event's deliveries carries its shard's hash tag, so that every script
// touches one hash slot; the tags are chosen by cluster slot (internal/keyspace), so the shards spread
// evenly over the masters of a Redis Cluster.
//
// The shard count is a property of the keyspace: delivery ids encode the shard (two hex digits) and
// keys its tag. It is stored on first use, under {P:registry}:shards, and every Dispatcher on the
// prefix reads it once, with the context of the first call that needs it (New does no I/O: a
// Dispatcher made while Redis is down or loading works once Redis answers):
//
//	{P:registry}:shards   string  "<S> b" (tags chosen by slot; queue members name their events, so
//	                              leases read the bodies: ks.Member), "<S>" for a keyspace stored
//	                              before that form (plain delivery ids as members), or "16 v1" for a
//	                              keyspace written before the count was stored (its tags are the
//	                              old {P:<s>}, s < 16)
//
// A keyspace counts as written before when its registry hash or one of the old shards' ready zsets
// exists and no count is stored: it keeps 16 shards and its old tags, so its records stay readable.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	ks "github.com/smartdrop/webhooks/internal/keyspace"
)

const (
	// DefaultShards is Options.Shards' default for a new keyspace.
	DefaultShards = 64
	// MaxShards bounds Options.Shards: a delivery id holds its shard in two hex digits.
	MaxShards = ks.MaxShards
)

// layoutScript reads the keyspace's stored shard count, storing it first when none is: "16 v1" when
// the keyspace was written before counts were stored (ARGV[2] = 1, or its registry hash exists), else
// ARGV[1] (ks.NewCount: "<S> b", its queue members naming their events). It returns the stored value.
//
// KEYS[1] -> {P:registry}:shards
// KEYS[2] -> {P:registry}:webhooks
// ARGV[1] -> the count to store in a new keyspace
// ARGV[2] -> 1 if one of the old shards' ready zsets exists, else 0
var layoutScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return v end
if ARGV[2] == '1' or redis.call('EXISTS', KEYS[2]) == 1 then v = '` + ks.LegacyCount + `' else v = ARGV[1] end
redis.call('SET', KEYS[1], v)
return v
`)

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
func (k keyspace) load(ctx context.Context, rdb redis.UniversalClient) error {
	if k.loaded.Load() {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.loaded.Load() {
		return nil
	}
	shards, legacy, bodyRefs, err := readLayout(ctx, rdb, k.prefix, k.want)
	if err != nil {
		return err
	}
	k.Layout = ks.NewLayout(k.prefix, shards, legacy)
	k.BodyRefs = bodyRefs
	k.loaded.Store(true)
	return nil
}

// readLayout reads the shard count stored for prefix, storing it on first use: want, or DefaultShards
// when want is 0; a stored count that differs from a set want is refused with ErrInvalidOptions.
func readLayout(ctx context.Context, rdb redis.UniversalClient, prefix string, want int) (shards int, legacy, bodyRefs bool, err error) {
	base := keyspace{prefix: prefix}
	old := false
	pipe := rdb.Pipeline()
	exists := make([]*redis.IntCmd, ks.LegacyShards)
	for s, tag := range ks.LegacyTags(prefix) {
		exists[s] = pipe.Exists(ctx, tag+":ready")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, false, false, fmt.Errorf("webhooks: read the keyspace's shard count: %w", err)
	}
	for _, c := range exists {
		old = old || c.Val() > 0
	}
	fresh := want
	if fresh == 0 {
		fresh = DefaultShards
	}
	oldArg := 0
	if old {
		oldArg = 1
	}
	v, err := layoutScript.Run(ctx, rdb, []string{base.shardsKey(), base.webhooksKey()}, ks.NewCount(fresh), oldArg).Text()
	if err != nil {
		return 0, false, false, fmt.Errorf("webhooks: read the keyspace's shard count: %w", err)
	}
	if shards, legacy, bodyRefs, err = ks.ParseCount(v); err != nil {
		return 0, false, false, err
	}
	if want != 0 && want != shards {
		return 0, false, false, fmt.Errorf("%w: Shards is %d but KeyPrefix %q holds %d shards (fixed once used)", ErrInvalidOptions, want, prefix, shards)
	}
	return shards, legacy, bodyRefs, nil
}

// shardsKey holds the keyspace's shard count.
func (k keyspace) shardsKey() string { return k.registryTag() + ":shards" }
