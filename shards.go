package webhooks

// Event shards and their hash tags.
//
// Every key of one event's deliveries carries its shard's hash tag, so that every script touches one
// hash slot. A Redis Cluster splits the 16384 slots into ranges, one or more per master; for the shards
// to spread evenly over the masters, shard i's tag is chosen by its slot: the tag of shard i of S is
// the first string "P:t<n>" (n = 0, 1, 2, …) whose CRC16 slot is the first slot of the i-th of S equal
// slot ranges, ⌊i·16384/S⌋. So any slot layout that splits at those boundaries (redis-cli --cluster
// create on M masters does, up to a slot) gives each master ⌊S/M⌋ or ⌈S/M⌉ shards. n stays below
// a few hundred thousand, so tags, keys and ids stay bounded.
//
// The shard count is a property of the keyspace: delivery ids encode the shard (two hex digits) and
// keys its tag. It is stored on first use, under {P:registry}:shards, and every Dispatcher on the
// prefix reads it once, with the context of the first call that needs it (New does no I/O: a
// Dispatcher made while Redis is down or loading works once Redis answers):
//
//	{P:registry}:shards   string  "<S>" (tags chosen by slot), or "16 v1" for a keyspace written
//	                              before the count was stored (its tags are the old {P:<s>}, s < 16)
//
// A keyspace counts as written before when its registry hash or one of the old shards' ready zsets
// exists and no count is stored: it keeps 16 shards and its old tags, so its records stay readable.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

const (
	// DefaultShards is Options.Shards' default for a new keyspace.
	DefaultShards = 64
	// MaxShards bounds Options.Shards: a delivery id holds its shard in two hex digits.
	MaxShards = 256
	// legacyShards is the shard count of a keyspace written before the count was stored.
	legacyShards = 16
	// clusterSlots is the number of Redis Cluster hash slots.
	clusterSlots = 16384
	// maxTagSearch bounds the search for a tag (never reached: CRC16 over "P:t<n>" covers every slot
	// within a few hundred thousand n).
	maxTagSearch = 1 << 22
)

// crc16 is Redis Cluster's CRC16 (XMODEM).
func crc16(s string) uint16 {
	var crc uint16
	for k := 0; k < len(s); k++ {
		crc ^= uint16(s[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// tagSlot is the hash slot of a hash tag's content.
func tagSlot(content string) int { return int(crc16(content)) % clusterSlots }

// rangeStart is the first slot of the i-th of shards equal slot ranges.
func rangeStart(i, shards int) int { return i * clusterSlots / shards }

// tagCache keeps the tags chosen per prefix and count (a search costs a few milliseconds).
var tagCache sync.Map // prefix + "/" + count -> []string

// slotTags returns the hash tags ("{P:t<n>}") of shards shards chosen by slot (see the file comment).
// The slice is shared: callers must not change it.
func slotTags(prefix string, shards int) []string {
	key := prefix + "/" + strconv.Itoa(shards)
	if tags, ok := tagCache.Load(key); ok {
		return tags.([]string)
	}
	tags := searchTags(prefix, shards)
	tagCache.Store(key, tags)
	return tags
}

// searchTags chooses the tags of slotTags.
func searchTags(prefix string, shards int) []string {
	want := make(map[int]int, shards) // slot -> shard
	for i := range shards {
		want[rangeStart(i, shards)] = i
	}
	tags := make([]string, shards)
	left := shards
	buf := make([]byte, 0, len(prefix)+16)
	for n := 0; left > 0 && n < maxTagSearch; n++ {
		buf = strconv.AppendInt(append(append(buf[:0], prefix...), ":t"...), int64(n), 10)
		i, ok := want[tagSlot(string(buf))]
		if ok && tags[i] == "" {
			tags[i] = "{" + string(buf) + "}"
			left--
		}
	}
	// Never taken in practice; were a slot unreachable, the first tag anywhere in the range will do.
	for i := range shards {
		for n := 0; tags[i] == "" && n < maxTagSearch; n++ {
			c := prefix + ":t" + strconv.Itoa(n)
			if s := tagSlot(c); s >= rangeStart(i, shards) && s < rangeStart(i+1, shards) {
				tags[i] = "{" + c + "}"
			}
		}
	}
	return tags
}

// legacyTags are the tags of a keyspace written before the count was stored: {P:0} … {P:15}.
func legacyTags(prefix string) []string {
	tags := make([]string, legacyShards)
	for s := range tags {
		tags[s] = "{" + prefix + ":" + strconv.Itoa(s) + "}"
	}
	return tags
}

// layoutScript reads the keyspace's stored shard count, storing it first when none is: "16 v1" when
// the keyspace was written before counts were stored (ARGV[2] = 1, or its registry hash exists), else
// ARGV[1]. It returns the stored value.
//
// KEYS[1] -> {P:registry}:shards
// KEYS[2] -> {P:registry}:webhooks
// ARGV[1] -> the shard count to store in a new keyspace
// ARGV[2] -> 1 if one of the old shards' ready zsets exists, else 0
var layoutScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return v end
if ARGV[2] == '1' or redis.call('EXISTS', KEYS[2]) == 1 then v = '` + strconv.Itoa(legacyShards) + ` v1' else v = ARGV[1] end
redis.call('SET', KEYS[1], v)
return v
`)

// parseLayout reads a stored shard count.
func parseLayout(v string) (shards int, legacy bool, err error) {
	s, legacy := strings.CutSuffix(v, " v1")
	shards, err = strconv.Atoi(s)
	if err != nil || shards < 1 || shards > MaxShards || legacy && shards != legacyShards {
		return 0, false, fmt.Errorf("webhooks: stored shard count %q is not one this version writes", v)
	}
	return shards, legacy, nil
}

// layout is a keyspace's shard count and tags, shared by every copy of the keyspace. A layout from
// newLazyKeyspace is empty until load reads it; shards and tags are read only after load (or of a
// layout built whole, newKeyspaceOf).
type layout struct {
	shards int      // the number of event shards, fixed per prefix once used
	tags   []string // the shards' hash tags, built once

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
	shards, legacy, err := readLayout(ctx, rdb, k.prefix, k.want)
	if err != nil {
		return err
	}
	k.shards = shards
	if legacy {
		k.tags = legacyTags(k.prefix)
	} else {
		k.tags = slotTags(k.prefix, shards)
	}
	k.loaded.Store(true)
	return nil
}

// readLayout reads the shard count stored for prefix, storing it on first use: want, or DefaultShards
// when want is 0; a stored count that differs from a set want is refused with ErrInvalidOptions.
func readLayout(ctx context.Context, rdb redis.UniversalClient, prefix string, want int) (shards int, legacy bool, err error) {
	base := keyspace{prefix: prefix}
	old := false
	pipe := rdb.Pipeline()
	exists := make([]*redis.IntCmd, legacyShards)
	for s, tag := range legacyTags(prefix) {
		exists[s] = pipe.Exists(ctx, tag+":ready")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, false, fmt.Errorf("webhooks: read the keyspace's shard count: %w", err)
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
	v, err := layoutScript.Run(ctx, rdb, []string{base.shardsKey(), base.webhooksKey()}, fresh, oldArg).Text()
	if err != nil {
		return 0, false, fmt.Errorf("webhooks: read the keyspace's shard count: %w", err)
	}
	if shards, legacy, err = parseLayout(v); err != nil {
		return 0, false, err
	}
	if want != 0 && want != shards {
		return 0, false, fmt.Errorf("%w: Shards is %d but KeyPrefix %q holds %d shards (fixed once used)", ErrInvalidOptions, want, prefix, shards)
	}
	return shards, legacy, nil
}

// newKeyspaceOf builds the keyspace of prefix with shards shards, tags chosen by slot, or the old
// tags when legacy.
func newKeyspaceOf(prefix string, shards int, legacy bool) keyspace {
	l := &layout{shards: shards}
	if legacy {
		l.tags = legacyTags(prefix)
	} else {
		l.tags = slotTags(prefix, shards)
	}
	l.loaded.Store(true)
	return keyspace{prefix: prefix, layout: l}
}

// shardsKey holds the keyspace's shard count.
func (k keyspace) shardsKey() string { return k.registryTag() + ":shards" }
