package rdb

// Erasing a tenant (the root's ExpungeTenant): one bounded step of it per call.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/types"
)

// ExpungeBatch is how many of a tenant's deliveries, and how many of its replay index's events, one
// step removes per shard at most.
const ExpungeBatch = 64

// ExpungeStep removes one bounded part of a tenant's data and returns how many keys, fields and
// entries it removed: 0 once nothing of the tenant is left. In at most five round trips, of at most
// 11·Shards + 4·W + 14 commands, MULTI and EXEC included (W: the tenant's webhooks):
//
//  1. it reads the tenant's webhook ids ({P:registry}:t:<tenant>:all) and, per shard, the oldest
//     ExpungeBatch entries of the tenant's index of deliveries ({P:s}:tlist:<tenant>) and of its
//     replay index ({P:s}:tevents:<tenant>);
//  2. the webhooks' patterns, and the records those index entries name (one MGET per shard);
//  3. in one transaction on a single Redis (on a cluster, which runs none across slots, or any
//     client but *redis.Client, one per shard, all sent at once): those records, their events'
//     bodies ({P:s}:evt:, {P:s}:oevt:), their order keys' sequences and blocked entries, their
//     inline entries, and the index entries read (a queue entry whose record is gone is dropped by the next lease, or with the shard's
//     leftovers); the events the replay index names and its entries read; a shard whose indexes were
//     read empty loses what is left of the tenant in it (the indexes, the webhooks' index streams
//     and queues, their ready entries). The order markers of ordered events ({P:s'}:evt: in their id's
//     shard), one DEL in that shard's transaction; and the tenant's subscription hashes (but on a
//     single Redis, a transaction of the registry's tag), so that no event of the tenant
//     is claimed any more once the Dispatchers' 1 s caches of subscribers have moved on;
//  4. once every shard was read empty: the webhooks themselves (their JSON, circuits, hourly
//     counters, the tenant's index of them: one transaction), then their rate limiters, concurrency
//     slots, OAuth2 tokens, the tenant's and its webhooks' action limiters (LimitedActions), and
//     the webhooks' counts of failed deliveries in the operational windows still alive at now.
//
// A delivery whose attempt is in flight meanwhile loses its lease with its record: its outcome writes
// nothing, and the circuit count creates nothing for a webhook the registry no longer holds
// (count.lua). Every write is a deletion, idempotent: steps of concurrent calls may overlap.
func ExpungeStep(ctx context.Context, c redis.UniversalClient, k Keys, tenant string, now time.Time) (int, error) {
	// 1. What is left.
	pipe := c.Pipeline()
	idsCmd := pipe.HKeys(ctx, k.Tenant(tenant))
	entries := make([]*redis.XMessageSliceCmd, k.Shards)
	replays := make([]*redis.StringSliceCmd, k.Shards)
	for s := range k.Shards {
		entries[s] = pipe.XRangeN(ctx, k.TenantIndex(s, tenant), "-", "+", ExpungeBatch)
		replays[s] = pipe.ZRange(ctx, k.Replay(s, tenant), 0, ExpungeBatch-1)
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return 0, fmt.Errorf("webhooks: expunge tenant %s: read: %w", tenant, err)
	}
	ids := idsCmd.Val()
	slices.Sort(ids)

	// 2. The webhooks' patterns, and the records the index entries name.
	pipe = c.Pipeline()
	var hooks *redis.SliceCmd
	if len(ids) > 0 {
		hooks = pipe.HMGet(ctx, k.Webhooks(), ids...)
	}
	recs := make([]*redis.SliceCmd, k.Shards)
	empty := true
	for s := range k.Shards {
		if len(entries[s].Val()) > 0 || len(replays[s].Val()) > 0 {
			empty = false
		}
		if keys := recordKeys(k, s, entries[s].Val()); len(keys) > 0 {
			recs[s] = pipe.MGet(ctx, keys...)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return 0, fmt.Errorf("webhooks: expunge tenant %s: read records: %w", tenant, err)
	}

	// 3. The shards, the order markers, the subscriptions: on a single Redis (*redis.Client) one
	// transaction; on any other client (a cluster, which runs no transaction across slots, or a
	// client that may wrap one) one per hash tag, sent together.
	var counted []*redis.IntCmd
	var txs []redis.Pipeliner
	_, single := c.(*redis.Client)
	txFor := func() redis.Pipeliner {
		if !single || len(txs) == 0 {
			txs = append(txs, c.TxPipeline())
		}
		return txs[len(txs)-1]
	}
	shardTx := make([]redis.Pipeliner, k.Shards)
	markers := map[int][]string{}
	for s := range k.Shards {
		var got []any
		if recs[s] != nil {
			got = recs[s].Val()
		}
		shardTx[s] = txFor()
		counted = append(counted, expungeShard(ctx, shardTx[s], k, s, tenant, ids, entries[s].Val(), got, replays[s].Val(), markers)...)
	}
	for s, keys := range markers {
		counted = append(counted, shardTx[s].Del(ctx, keys...))
	}
	if subs := subscriptionKeys(k, tenant, hooks); len(subs) > 0 {
		counted = append(counted, txFor().Del(ctx, subs...))
	}
	if err := execAll(ctx, txs); err != nil {
		return 0, fmt.Errorf("webhooks: expunge tenant %s: %w", tenant, err)
	}
	removed := sum(counted)
	if !empty {
		return removed, nil
	}

	// 4. The webhooks, once their deliveries are gone: the registry's part in one transaction, then
	// the keys of their own hash tags.
	counted = counted[:0]
	tx := c.TxPipeline()
	reg := append([]string{k.Tenant(tenant)}, mapKeys(ids, k.Hourly)...)
	counted = append(counted, tx.Del(ctx, reg...))
	if len(ids) > 0 {
		counted = append(counted, tx.HDel(ctx, k.Webhooks(), ids...), tx.HDel(ctx, k.Circuits(), ids...))
	}
	if _, err := tx.Exec(ctx); err != nil && err != redis.Nil {
		return removed, fmt.Errorf("webhooks: expunge tenant %s: webhooks: %w", tenant, err)
	}
	pipe = c.Pipeline()
	for _, id := range ids {
		counted = append(counted, pipe.Del(ctx, k.Rate(id)), pipe.Del(ctx, k.Concurrency(id)),
			pipe.Del(ctx, k.Token(id), k.TokenLock(id)))
	}
	for _, action := range LimitedActions { // one DEL per action: its limiters share the tenant's hash tag
		limiters := append([]string{k.TenantLimiter(action, tenant)}, mapKeys(ids, func(id string) string { return k.WebhookLimiter(action, tenant, id) })...)
		counted = append(counted, pipe.Del(ctx, limiters...))
	}
	for _, id := range ids { // one DEL per webhook: its windows share its hash tag
		counted = append(counted, pipe.Del(ctx, failedCounts(k, id, now)...))
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return removed, fmt.Errorf("webhooks: expunge tenant %s: the webhooks' limiters and tokens: %w", tenant, err)
	}
	return removed + sum(counted), nil
}

// expungeShard queues, in tx, the deletions of one shard s (ExpungeStep's step 3): the records got
// for the index entries read, and what they name; the events of the replay index's entries read; and,
// when both indexes were read empty, the rest of the tenant's keys and entries in the shard. The order
// markers of ordered events, in their ids' shards, are added to markers.
func expungeShard(ctx context.Context, tx redis.Pipeliner, k Keys, s int, tenant string, ids []string,
	entries []redis.XMessage, got []any, replays []string, markers map[int][]string) []*redis.IntCmd {
	var out []*redis.IntCmd
	if len(entries) == 0 && len(replays) == 0 {
		leftover := []string{k.TenantIndex(s, tenant), k.Replay(s, tenant)}
		for _, id := range ids {
			leftover = append(leftover, k.Index(s, id), k.Queue(s, id))
		}
		out = append(out, tx.Del(ctx, leftover...))
		if len(ids) > 0 {
			out = append(out, tx.ZRem(ctx, k.Ready(s), toAny(ids)...))
		}
		return out
	}
	del := []string{}
	var inline, blocked []any
	for i, v := range got {
		raw, ok := v.(string)
		if !ok {
			continue // expired meanwhile
		}
		id := IndexedID(s, entries[i].Values["d"].(string))
		rec, err := ParseRecord(id, raw)
		if err != nil {
			del = append(del, k.Delivery(s, id)) // not readable: still the tenant's
			continue
		}
		scoped := ScopedEventID(tenant, rec.EventID)
		del = append(del, k.Delivery(s, id))
		inline = append(inline, id+rec.WebhookID) // its queue entry goes with the shard's leftovers, or the next lease
		if rec.OrderKey == "" {
			del = append(del, k.Event(s, scoped))
			continue
		}
		del = append(del, k.OrderedEvent(s, scoped), k.Seq(s, rec.WebhookID, rec.OrderKey))
		blocked = append(blocked, BlockedMember(rec.WebhookID, rec.OrderKey))
		ms := k.ShardOf(scoped)
		markers[ms] = append(markers[ms], k.Event(ms, scoped))
	}
	for _, e := range replays {
		del = append(del, k.Event(s, ScopedEventID(tenant, e)))
	}
	del = slices.Compact(slices.Sorted(slices.Values(del)))
	if len(del) > 0 {
		out = append(out, tx.Del(ctx, del...))
	}
	if len(inline) > 0 {
		out = append(out, tx.ZRem(ctx, k.Inline(s), inline...))
	}
	if len(blocked) > 0 {
		out = append(out, tx.ZRem(ctx, k.Blocked(s), blocked...))
	}
	if len(entries) > 0 {
		xids := make([]string, len(entries))
		for i, e := range entries {
			xids[i] = e.ID
		}
		out = append(out, tx.XDel(ctx, k.TenantIndex(s, tenant), xids...))
	}
	if len(replays) > 0 {
		out = append(out, tx.ZRem(ctx, k.Replay(s, tenant), toAny(replays)...))
	}
	return out
}

// execAll runs the transactions at once and returns their errors (redis.Nil is none).
func execAll(ctx context.Context, txs []redis.Pipeliner) error {
	errs := make([]error, len(txs))
	var wg sync.WaitGroup
	for i, tx := range txs {
		wg.Go(func() {
			if _, err := tx.Exec(ctx); err != nil && err != redis.Nil {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// recordKeys are the record keys of a shard's index entries, in their order (an entry without its
// delivery hash names no record: "").
func recordKeys(k Keys, s int, entries []redis.XMessage) []string {
	if len(entries) == 0 {
		return nil
	}
	keys := make([]string, len(entries))
	for i, e := range entries {
		h, _ := e.Values["d"].(string)
		keys[i] = k.Delivery(s, IndexedID(s, h))
	}
	return keys
}

// subscriptionKeys are the tenant's subscription hashes of the patterns of its webhooks as hooks
// (HMGET of the registry) holds them.
func subscriptionKeys(k Keys, tenant string, hooks *redis.SliceCmd) []string {
	if hooks == nil {
		return nil
	}
	var keys []string
	for _, v := range hooks.Val() {
		raw, ok := v.(string)
		if !ok {
			continue
		}
		var w struct {
			Events []string `json:"events"`
		}
		if json.Unmarshal([]byte(raw), &w) != nil {
			continue
		}
		for _, p := range w.Events {
			keys = append(keys, k.TenantSubscribers(tenant, p))
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(keys)))
}

// mapKeys is f of each id.
func mapKeys(ids []string, f func(string) string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = f(id)
	}
	return out
}

// toAny is ss as command arguments.
func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// sum is the total of the integer replies of cmds (a failed one counts 0).
func sum(cmds []*redis.IntCmd) int {
	n := 0
	for _, c := range cmds {
		n += int(c.Val())
	}
	return n
}

// failedCounts are the keys of a webhook's counts of failed deliveries (Keys.FailedCount) that may
// still be alive at now: count_failed.lua keeps one 2 windows after its first count, so a window
// starting 3 windows ago is gone (the next window too, against a record stamped by a clock ahead).
func failedCounts(k Keys, id string, now time.Time) []string {
	window := types.OperationalWindow.Milliseconds()
	cur := now.UnixMilli() / window * window
	keys := make([]string, 0, 4)
	for start := cur - 2*window; start <= cur+window; start += window {
		keys = append(keys, k.FailedCount(id, start))
	}
	return keys
}
