// Package ratelimit is a webhook's rate limit (Webhook.RateLimit) and the limits of the actions a
// tenant reaches (test sends, resends, retries, probes; actions.go): slots spaced 1/perSecond apart,
// kept in Redis as the start of the next free slot (rdb.Rate, a GCRA; an action's two limiters, the
// webhook's and its tenant's, together, rdb.TakeBoth) and shared by every replica, taken ahead within
// a horizon.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// Positions in rdb.Rate's reply.
const (
	replyGranted = 0 // number of slots granted
	replyFirst   = 1 // delay (µs) of the first slot granted, or of the next free slot
	replyLen     = 2
)

// ErrInvalidArgs is returned (wrapped) by Take for a rate, count or horizon out of range.
var ErrInvalidArgs = errors.New("webhooks: invalid rate limit arguments")

// interval is the spacing of the slots of perSecond requests per second, in whole microseconds,
// rounded up so the rate is never exceeded.
func interval(perSecond int) int64 {
	return (int64(time.Second/time.Microsecond) + int64(perSecond) - 1) / int64(perSecond)
}

// Interval is the spacing of the slots of perSecond requests per second (whole microseconds, rounded
// up so the rate is never exceeded).
func Interval(perSecond int) time.Duration {
	return time.Duration(interval(perSecond)) * time.Microsecond
}

// Take takes up to want slots of a limiter (key, as rdb.Keys names it) of perSecond requests per
// second, whose start lies within horizon from now. It returns the delay from now of each slot granted
// (ascending; the first may be 0), or, with none granted, how long until the next slot is free.
func Take(ctx context.Context, client redis.UniversalClient, key string, perSecond, want int, horizon time.Duration) (delays []time.Duration, retryIn time.Duration, err error) {
	if perSecond <= 0 || want < 1 || horizon < 0 {
		return nil, 0, fmt.Errorf("%w: %d per second, %d wanted, horizon %s", ErrInvalidArgs, perSecond, want, horizon)
	}
	step := interval(perSecond)
	reply, err := rdb.Rate.Run(ctx, client, []string{key}, step, want, horizon.Microseconds()).Int64Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("webhooks: take rate slots of %s: %w", key, err)
	}
	if len(reply) != replyLen {
		return nil, 0, fmt.Errorf("webhooks: take rate slots of %s: reply of %d values", key, len(reply))
	}
	first := time.Duration(reply[replyFirst]) * time.Microsecond
	n := int(reply[replyGranted])
	if n == 0 {
		return nil, first, nil
	}
	delays = make([]time.Duration, n)
	for i := range delays {
		delays[i] = first + time.Duration(int64(i)*step)*time.Microsecond
	}
	return delays, 0, nil
}

// Free counts, from a limiter's stored TAT (as GET returns it, "" when none) and this process's clock,
// the slots free within horizon from now, and when none is, how long until one is. It only reads: a
// worker uses it to decide how many deliveries to lease, and each attempt then takes its own slot with
// Take. A clock apart from Redis's makes the count off, never the limit.
func Free(tat string, now time.Time, perSecond int, horizon time.Duration) (int, time.Duration) {
	step := interval(perSecond)
	nowUS := now.UnixMicro()
	next, err := strconv.ParseInt(tat, 10, 64)
	if err != nil || next < nowUS {
		next = nowUS
	}
	first := next - nowUS
	if first > horizon.Microseconds() {
		return 0, time.Duration(first-horizon.Microseconds()) * time.Microsecond
	}
	return int((horizon.Microseconds()-first)/step) + 1, 0
}
