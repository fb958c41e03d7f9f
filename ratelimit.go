package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
)

// Positions in rdb.Rate's reply.
const (
	rateReplyGranted = 0 // number of slots granted
	rateReplyFirst   = 1 // delay (µs) of the first slot granted, or of the next free slot
	rateReplyLen     = 2
)

var errRateArgs = errors.New("webhooks: invalid rate limit arguments")

// rateInterval is the spacing of the slots of perSecond requests per second, in whole microseconds,
// rounded up so the rate is never exceeded.
func rateInterval(perSecond int) int64 {
	return (int64(time.Second/time.Microsecond) + int64(perSecond) - 1) / int64(perSecond)
}

// takeRateSlots takes up to want slots of a webhook limited to perSecond requests per second, whose
// start lies within horizon from now. It returns the delay from now of each slot granted (ascending; the
// first may be 0), or, with none granted, how long until the next slot is free.
func takeRateSlots(ctx context.Context, client redis.UniversalClient, key string, perSecond, want int, horizon time.Duration) (delays []time.Duration, retryIn time.Duration, err error) {
	if perSecond <= 0 || want < 1 || horizon < 0 {
		return nil, 0, fmt.Errorf("%w: %d per second, %d wanted, horizon %s", errRateArgs, perSecond, want, horizon)
	}
	interval := rateInterval(perSecond)
	reply, err := rdb.Rate.Run(ctx, client, []string{key}, interval, want, horizon.Microseconds()).Int64Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("webhooks: take rate slots of %s: %w", key, err)
	}
	if len(reply) != rateReplyLen {
		return nil, 0, fmt.Errorf("webhooks: take rate slots of %s: reply of %d values", key, len(reply))
	}
	first := time.Duration(reply[rateReplyFirst]) * time.Microsecond
	n := int(reply[rateReplyGranted])
	if n == 0 {
		return nil, first, nil
	}
	delays = make([]time.Duration, n)
	for i := range delays {
		delays[i] = first + time.Duration(int64(i)*interval)*time.Microsecond
	}
	return delays, 0, nil
}

// freeRateSlots counts, from a limiter's stored TAT (as GET returns it, "" when none) and this
// process's clock, the slots free within horizon from now, and when none is, how long until one is.
// It only reads: a worker uses it to decide how many deliveries to lease, and each attempt then takes
// its own slot with takeRateSlots. A clock apart from Redis's makes the count off, never the limit.
func freeRateSlots(tat string, now time.Time, perSecond int, horizon time.Duration) (int, time.Duration) {
	interval := rateInterval(perSecond)
	nowUS := now.UnixMicro()
	next, err := strconv.ParseInt(tat, 10, 64)
	if err != nil || next < nowUS {
		next = nowUS
	}
	first := next - nowUS
	if first > horizon.Microseconds() {
		return 0, time.Duration(first-horizon.Microseconds()) * time.Microsecond
	}
	return int((horizon.Microseconds()-first)/interval) + 1, 0
}
