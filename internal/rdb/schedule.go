package rdb

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReadyEntry is an entry of a shard's ready zset: a webhook and its ready score (ms).
type ReadyEntry struct {
	Webhook string
	Score   int64
}

// EndedInline is an entry of a shard's inline zset whose lease has ended: an inline attempt's delivery
// and its webhook.
type EndedInline struct {
	Shard     int
	ID        string
	WebhookID string
}

// ReadDue reads, in one round trip, the head of the ready zsets of shards ready (at most limit+1
// entries each, in score order) and the head of the inline zsets of shards inline (at most limit+1
// entries each): of those, the entries whose lease ended by nowMs (at most limit per shard) and, per
// shard of inline, the earliest lease end after nowMs (math.MaxInt64 when none is read; nowMs when more
// than limit leases have ended: read again). It returns the ready entries in the order of ready. On a
// transport error it reloads a cluster's slot map (ReloadOnTransport).
func ReadDue(ctx context.Context, c redis.UniversalClient, keys Keys, ready, inline []int, limit int, nowMs int64) ([][]ReadyEntry, []EndedInline, []int64, error) {
	pipe := c.Pipeline()
	heads := make([]*redis.ZSliceCmd, len(ready))
	for k, s := range ready {
		heads[k] = pipe.ZRangeWithScores(ctx, keys.Ready(s), 0, int64(limit))
	}
	inlines := make([]*redis.ZSliceCmd, len(inline))
	for k, s := range inline {
		inlines[k] = pipe.ZRangeWithScores(ctx, keys.Inline(s), 0, int64(limit))
	}
	if pipe.Len() == 0 {
		return nil, nil, nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		ReloadOnTransport(c, err)
		return nil, nil, nil, err
	}
	entries := make([][]ReadyEntry, len(ready))
	for k, cmd := range heads {
		entries[k] = make([]ReadyEntry, len(cmd.Val()))
		for i, z := range cmd.Val() {
			id, _ := z.Member.(string)
			entries[k][i] = ReadyEntry{Webhook: id, Score: int64(z.Score)}
		}
	}
	var strays []EndedInline
	next := make([]int64, len(inline))
	for k, cmd := range inlines {
		next[k] = math.MaxInt64
		ended := 0
		for _, z := range cmd.Val() {
			if int64(z.Score) > nowMs {
				next[k] = int64(z.Score)
				break
			}
			if ended++; ended > limit {
				next[k] = nowMs
				break
			}
			e, _ := z.Member.(string)
			if id, webhookID, ok := SplitInlineEntry(e); ok {
				strays = append(strays, EndedInline{Shard: inline[k], ID: id, WebhookID: webhookID})
			}
		}
	}
	return entries, strays, next, nil
}

// Park moves a webhook's ready score in shards to until if that is later (ZADD XX GT): one round
// trip, each shard's ZADD in one pipeline.
func Park(ctx context.Context, c redis.UniversalClient, keys Keys, webhookID string, shards []int, until time.Time) error {
	pipe := c.Pipeline()
	for _, s := range shards {
		pipe.ZAddArgs(ctx, keys.Ready(s), redis.ZAddArgs{XX: true, GT: true,
			Members: []redis.Z{{Score: float64(until.UnixMilli()), Member: webhookID}}})
	}
	_, err := pipe.Exec(ctx)
	return err
}

// QueueRead is a read of up to N due ids of a webhook's queue in a shard.
type QueueRead struct {
	Shard   int
	Webhook string
	N       int
}

// ReadQueues reads, in one round trip, the due ids (scored at most nowMs, earliest first) of each of
// reads that is not nil, and the rate limiter's stored TAT of each of rated ("" when none). It returns
// the ids in the order of reads (nil for a nil read) and the TATs by webhook.
func ReadQueues(ctx context.Context, c redis.UniversalClient, keys Keys, reads []*QueueRead, rated []string, nowMs int64) ([][]string, map[string]string, error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.StringSliceCmd, len(reads))
	for i, r := range reads {
		if r != nil {
			cmds[i] = pipe.ZRangeArgs(ctx, redis.ZRangeArgs{Key: keys.Queue(r.Shard, r.Webhook), ByScore: true,
				Start: "-inf", Stop: strconv.FormatInt(nowMs, 10), Count: int64(r.N)})
		}
	}
	rates := make([]*redis.StringCmd, len(rated))
	for i, id := range rated {
		rates[i] = pipe.Get(ctx, keys.Rate(id))
	}
	if pipe.Len() > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, err
		}
	}
	ids := make([][]string, len(reads))
	for i, cmd := range cmds {
		if cmd != nil {
			ids[i] = cmd.Val()
		}
	}
	tats := make(map[string]string, len(rated))
	for i, id := range rated {
		tats[id] = rates[i].Val()
	}
	return ids, tats, nil
}

// Unpark lowers a webhook's ready score in shards to at if that is earlier (ZADD XX LT): one round
// trip, each shard's ZADD in one pipeline, with a wake of its ready zset at at (as lib/wake.lua's: the
// workers that know the park sleep until its end). It undoes a park (Park) while leaving a webhook due
// sooner as it is.
func Unpark(ctx context.Context, c redis.UniversalClient, keys Keys, webhookID string, shards []int, at time.Time) error {
	pipe := c.Pipeline()
	for _, s := range shards {
		pipe.ZAddArgs(ctx, keys.Ready(s), redis.ZAddArgs{XX: true, LT: true,
			Members: []redis.Z{{Score: float64(at.UnixMilli()), Member: webhookID}}})
		publishWake(ctx, pipe, keys.Ready(s), at.UnixMilli())
	}
	_, err := pipe.Exec(ctx)
	return err
}

// AdoptRun is the run of the Adopt script that takes entries (of one shard) of the shard's inline zset
// scored at most byMs into their webhooks' queues; its reply is how many it took.
func AdoptRun(keys Keys, shard int, byMs int64, entries []EndedInline) ScriptRun {
	run := ScriptRun{Script: Adopt, Keys: make([]string, 0, 2+len(entries)), Args: make([]any, 0, 1+2*len(entries))}
	run.Keys = append(run.Keys, keys.Ready(shard), keys.Inline(shard))
	run.Args = append(run.Args, byMs)
	for _, e := range entries {
		run.Keys = append(run.Keys, keys.Queue(shard, e.WebhookID))
		run.Args = append(run.Args, e.ID, e.WebhookID)
	}
	return run
}

// UnscheduleLeased takes a leased delivery (id, of webhookID, its lease held by token) off its queue in
// shard without recording an attempt, and releases its lease (the Unschedule script): for a record that
// cannot be decoded, or that is not pending.
func UnscheduleLeased(ctx context.Context, c redis.UniversalClient, keys Keys, shard int, webhookID, id, token string) error {
	k := []string{keys.Ready(shard), keys.Queue(shard, webhookID), keys.Delivery(shard, id)}
	return Unschedule.Run(ctx, c, k, id, token, webhookID).Err()
}
