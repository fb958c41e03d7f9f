package rdb

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// WakeKind is which of a shard's zsets a wake names: its ready zset (a webhook's ready score was lowered)
// or its inline zset (an inline lease became its head).
type WakeKind uint8

const (
	WakeReady WakeKind = iota
	WakeInline
)

// WakeChannel is a shard's zset a wake channel names.
type WakeChannel struct {
	Shard int
	Kind  WakeKind
}

// WakeChannels returns the channels the scripts publish wakes on (lib/wake.lua; the schema comment): every
// shard's ready and inline zsets' key names, in shard order, and what each names.
func WakeChannels(k Keys) ([]string, map[string]WakeChannel) {
	names := make([]string, 0, 2*k.Shards)
	of := make(map[string]WakeChannel, 2*k.Shards)
	for s := range k.Shards {
		names = append(names, k.Ready(s), k.Inline(s))
		of[k.Ready(s)] = WakeChannel{Shard: s, Kind: WakeReady}
		of[k.Inline(s)] = WakeChannel{Shard: s, Kind: WakeInline}
	}
	return names, of
}

// ParseWake reads a wake's payload: when (ms) the zset its channel names has something due.
func ParseWake(payload string) (int64, bool) {
	ms, err := strconv.ParseInt(payload, 10, 64)
	return ms, err == nil && ms > 0
}

// publishWake queues in pipe the wake of a shard's zset key at atMs, as lib/wake.lua publishes it.
func publishWake(ctx context.Context, pipe redis.Pipeliner, key string, atMs int64) {
	pipe.Publish(ctx, key, strconv.FormatInt(atMs, 10))
}
