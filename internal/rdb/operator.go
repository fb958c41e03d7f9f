package rdb

// The writes and reads of the operator's actions and views in the admin API: retry now (RetryDeliveryNow),
// probe now (EndOpenPeriod, ReadParked, WakeParkedRun), a delivery's payload (ReadEventBody) and its
// redeliveries (ReadIndexWindows).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RetryDeliveryNow runs the RetryNow script on a delivery of shard: it makes the pending delivery due at now
// unless it is in flight or held back, and returns the script's reply (RetryGone, RetryNotPending,
// RetryInFlight, RetryNotQueued or RetryDue).
func RetryDeliveryNow(ctx context.Context, c redis.UniversalClient, k Keys, shard int, deliveryID, webhookID string, now time.Time) (int, error) {
	keys := []string{k.Delivery(shard, deliveryID), k.Ready(shard), k.Queue(shard, webhookID)}
	return RetryNow.Run(ctx, c, keys, now.UnixMilli(), deliveryID, webhookID).Int()
}

// OpenPeriodEnd is the ProbeNow script's reply.
type OpenPeriodEnd struct {
	// Code is ProbeGranted (the open period has ended), ProbeClosed or ProbeHeld.
	Code int64
	// Circuit is the circuit after the call, as the circuits hash stores it ("" for none).
	Circuit any
	// Was is when the open period ended before the call (zero for none).
	Was time.Time
}

// EndOpenPeriod runs the ProbeNow script: it ends a webhook's open circuit's open period at now,
// unless its probe is held.
func EndOpenPeriod(ctx context.Context, c redis.UniversalClient, k Keys, webhookID string, now time.Time) (OpenPeriodEnd, error) {
	reply, err := ProbeNow.Run(ctx, c, []string{k.Circuits()}, webhookID, now.UnixMilli()).Slice()
	if err == nil && len(reply) != 3 {
		err = fmt.Errorf("reply %v", reply)
	}
	if err != nil {
		return OpenPeriodEnd{}, err
	}
	code, _ := reply[0].(int64)
	was, _ := reply[2].(int64)
	return OpenPeriodEnd{Code: code, Circuit: reply[1], Was: MilliTime(was)}, nil
}

// ReadParked reads, in one round trip, the first n deliveries of a webhook's queue in every shard
// that are due by until, one slice per shard.
func ReadParked(ctx context.Context, c redis.UniversalClient, k Keys, webhookID string, until time.Time, n int) ([][]string, error) {
	pipe := c.Pipeline()
	reads := make([]*redis.StringSliceCmd, k.Shards)
	for s := range k.Shards {
		reads[s] = pipe.ZRangeByScore(ctx, k.Queue(s, webhookID), &redis.ZRangeBy{Min: "-inf",
			Max: strconv.FormatInt(until.UnixMilli(), 10), Count: int64(n)})
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("webhooks: read the parked deliveries of %s: %w", webhookID, err)
	}
	out := make([][]string, k.Shards)
	for s, cmd := range reads {
		out[s] = cmd.Val()
	}
	return out, nil
}

// WakeParkedRun is the WakeParked script's run that makes due at due the deliveries ids of a
// webhook's queue in shard; its reply is how many it made due.
func WakeParkedRun(k Keys, shard int, webhookID string, ids []string, due time.Time) ScriptRun {
	keys := []string{k.Ready(shard), k.Queue(shard, webhookID)}
	args := []any{due.UnixMilli(), webhookID}
	for _, member := range ids {
		keys, args = append(keys, k.Delivery(shard, member)), append(args, member)
	}
	return ScriptRun{Script: WakeParked, Keys: keys, Args: args}
}

// bodyKey is the key of the body of an event stored in shard (scoped: its id scoped by its tenant):
// an ordered event's key when ordered.
func bodyKey(k Keys, shard int, scoped string, ordered bool) string {
	if ordered {
		return k.OrderedEvent(shard, scoped)
	}
	return k.Event(shard, scoped)
}

// EventStored reports whether the body of an event stored in shard (as ReadEventBody finds it) is
// still stored, without reading it.
func EventStored(ctx context.Context, c redis.UniversalClient, k Keys, shard int, scoped string, ordered bool) (bool, error) {
	n, err := c.Exists(ctx, bodyKey(k, shard, scoped, ordered)).Result()
	return n == 1, err
}

// ReadEventBody reads the body of an event stored in shard (scoped: its id scoped by its tenant; an
// ordered event's key when ordered), nil once it expired.
func ReadEventBody(ctx context.Context, c redis.UniversalClient, k Keys, shard int, scoped string, ordered bool) ([]byte, error) {
	stored, err := c.Get(ctx, bodyKey(k, shard, scoped, ordered)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return EventBody(stored), nil
}

// IndexWindow is a span of a webhook's index of deliveries, by the entries' times (ms, both ends
// inclusive).
type IndexWindow struct{ From, To int64 }

// ReadIndexWindows reads, in one round trip, the newest n entries of each window of a webhook's index
// in shard, newest first, one slice per window (a window ending before it begins reads nothing).
func ReadIndexWindows(ctx context.Context, c redis.UniversalClient, k Keys, shard int, webhookID string, windows []IndexWindow, n int) ([][]redis.XMessage, error) {
	key := k.Index(shard, webhookID)
	pipe := c.Pipeline()
	reads := make([]*redis.XMessageSliceCmd, len(windows))
	for i, w := range windows {
		if w.To >= w.From {
			reads[i] = pipe.XRevRangeN(ctx, key, strconv.FormatInt(w.To, 10), strconv.FormatInt(w.From, 10), int64(n))
		}
	}
	out := make([][]redis.XMessage, len(windows))
	if pipe.Len() == 0 {
		return out, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	for i, cmd := range reads {
		if cmd != nil {
			out[i] = cmd.Val()
		}
	}
	return out, nil
}
