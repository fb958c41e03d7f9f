package rdb

// The reads of a webhook's index of deliveries (one stream per shard, Keys.Index) and of the records
// its entries name, for internal/index's pages and searches and the admin API's counts.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/types"
)

// ReadIndexes reads, in one round trip, up to count entries of each shard's index of webhookID from the
// stream id from (inclusive; "+" for the newest), newest first, one slice per shard. With checkWebhook
// set the same round trip checks that the webhook is registered: an unknown one gives an error wrapping
// types.ErrNotFound.
func ReadIndexes(ctx context.Context, c redis.UniversalClient, k Keys, webhookID, from string, count int, checkWebhook bool) ([][]redis.XMessage, error) {
	pipe := c.Pipeline()
	var exists *redis.BoolCmd
	if checkWebhook {
		exists = pipe.HExists(ctx, k.Webhooks(), webhookID)
	}
	ranges := make([]*redis.XMessageSliceCmd, k.Shards)
	for s := range k.Shards {
		ranges[s] = pipe.XRevRangeN(ctx, k.Index(s, webhookID), from, "-", int64(count))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("webhooks: read the deliveries of %s: %w", webhookID, err)
	}
	if exists != nil && !exists.Val() {
		return nil, fmt.Errorf("%w: webhook %q", types.ErrNotFound, webhookID)
	}
	reads := make([][]redis.XMessage, k.Shards)
	for s, cmd := range ranges {
		reads[s] = cmd.Val()
	}
	return reads, nil
}

// IndexedRecord names the record an index entry points at: its shard, its delivery id, and the
// record's expiry (ms) when it was indexed.
type IndexedRecord struct {
	Shard  int
	ID     string
	Expiry int64
}

// ReadIndexedRecords reads the records of webhookID's index entries refs in one round trip, one per
// entry: an entry that has expired by now, whose record is gone, cannot be decoded, belongs to another
// webhook or was indexed again by a later Redeliver (its expiry differs) maps to nil.
func ReadIndexedRecords(ctx context.Context, c redis.UniversalClient, k Keys, webhookID string, refs []IndexedRecord, now time.Time) ([]*Record, error) {
	keys := make([]string, len(refs))
	for i, r := range refs {
		if r.Expiry > now.UnixMilli() {
			keys[i] = k.Delivery(r.Shard, r.ID)
		}
	}
	raws, err := getAll(ctx, c, keys)
	if err != nil {
		return nil, fmt.Errorf("webhooks: read the deliveries of %s: %w", webhookID, err)
	}
	out := make([]*Record, len(refs))
	for i, r := range refs {
		if raws[i] == "" {
			continue // expired, gone, or not a record
		}
		if rec, err := ParseRecord(r.ID, raws[i]); err == nil && rec.WebhookID == webhookID && UnixMilli(rec.ExpiresAt) == r.Expiry {
			out[i] = rec
		}
	}
	return out, nil
}

// ReadRecords reads the records of the deliveries ids of a shard in one round trip, one per id: one
// that is gone or cannot be decoded maps to nil.
func ReadRecords(ctx context.Context, c redis.UniversalClient, k Keys, shard int, ids []string) ([]*Record, error) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = k.Delivery(shard, id)
	}
	raws, err := getAll(ctx, c, keys)
	if err != nil {
		return nil, err
	}
	out := make([]*Record, len(ids))
	for i, id := range ids {
		if raws[i] == "" {
			continue
		}
		if rec, err := ParseRecord(id, raws[i]); err == nil {
			out[i] = rec
		}
	}
	return out, nil
}

// ReadShardRecords reads the records of the deliveries ids[s] of each shard s with one MGET per shard
// (the keys of a shard share its slot), all in one round trip: one per id, nil for one that is gone or
// cannot be decoded.
func ReadShardRecords(ctx context.Context, c redis.UniversalClient, k Keys, ids map[int][]string) (map[int][]*Record, error) {
	pipe := c.Pipeline()
	gets := make(map[int]*redis.SliceCmd, len(ids))
	for s, shardIDs := range ids {
		keys := make([]string, len(shardIDs))
		for j, id := range shardIDs {
			keys[j] = k.Delivery(s, id)
		}
		gets[s] = pipe.MGet(ctx, keys...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make(map[int][]*Record, len(ids))
	for s, shardIDs := range ids {
		vals := gets[s].Val()
		out[s] = make([]*Record, len(shardIDs))
		for j, id := range shardIDs {
			raw, _ := vals[j].(string)
			if raw == "" {
				continue
			}
			if rec, err := ParseRecord(id, raw); err == nil {
				out[s][j] = rec
			}
		}
	}
	return out, nil
}

// getAll GETs keys in one pipeline (of any slots, unlike MGET), skipping "" keys: the values, "" for a
// key skipped, missing or not a string.
func getAll(ctx context.Context, c redis.UniversalClient, keys []string) ([]string, error) {
	pipe := c.Pipeline()
	gets := make([]*redis.StringCmd, len(keys))
	for i, key := range keys {
		if key != "" {
			gets[i] = pipe.Get(ctx, key)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]string, len(keys))
	for i, g := range gets {
		if g != nil {
			out[i], _ = g.Result()
		}
	}
	return out, nil
}

// ReadRecord reads the stored record of delivery id in shard; found is false when there is none.
func ReadRecord(ctx context.Context, c redis.UniversalClient, k Keys, shard int, id string) (raw string, found bool, err error) {
	raw, err = c.Get(ctx, k.Delivery(shard, id)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return raw, err == nil, err
}

// Queued reports, for each of webhookID's records refs, whether it is in its webhook's queue in its
// shard (scheduled for an attempt), in one round trip.
func Queued(ctx context.Context, c redis.UniversalClient, k Keys, webhookID string, refs []IndexedRecord) ([]bool, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.FloatCmd, len(refs))
	pipe := c.Pipeline()
	for i, r := range refs {
		cmds[i] = pipe.ZScore(ctx, k.Queue(r.Shard, webhookID), r.ID)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]bool, len(refs))
	for i, cmd := range cmds {
		out[i] = cmd.Err() == nil
	}
	return out, nil
}
