package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// rateKey is the key of a webhook's rate limiter: its own hash tag, so each webhook's limiter is one
// slot of a cluster, apart from the shards.
func (k keyspace) rateKey(webhookID string) string {
	return "{" + k.prefix + ":rate:" + webhookID + "}"
}

// rateScript is a GCRA limiter without burst: it keeps the theoretical arrival time (TAT), the start
// of the webhook's next free slot, in microseconds of the Redis server's clock (TIME), so the clocks
// of the replicas do not matter. Slots are exactly one interval apart; the script grants the next
// free slots, up to the number wanted, whose start lies within the horizon from now, and moves the
// TAT past the last one granted. The key expires a second after the TAT: an idle limiter leaves
// nothing behind. The TAT is written with %.0f, as a Lua number argument would lose its last digits.
//
// KEYS[1] -> {P:rate:<webhook_id>}   the TAT (µs since the Unix epoch, server time)
// ARGV[1] -> interval (µs) between two slots, ≥ 1
// ARGV[2] -> slots wanted, ≥ 1
// ARGV[3] -> horizon (µs), ≥ 0: a slot is granted only if it starts no later than now + horizon
// returns {granted, first}: the number of slots granted (from 0 to the number wanted), and the delay
// (µs) from now of the first of them, or when none is granted, of the next free slot
var rateScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval, want, horizon = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or 0)
if tat < now then tat = now end
local first = tat - now
if first > horizon then return {0, first} end
local n = math.min(want, math.floor((horizon - first) / interval) + 1)
tat = tat + n * interval
redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.floor((tat - now) / 1000) + 1000)
return {n, first}
`)

// Positions in rateScript's reply.
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
func takeRateSlots(ctx context.Context, rdb redis.UniversalClient, key string, perSecond, want int, horizon time.Duration) (delays []time.Duration, retryIn time.Duration, err error) {
	if perSecond <= 0 || want < 1 || horizon < 0 {
		return nil, 0, fmt.Errorf("%w: %d per second, %d wanted, horizon %s", errRateArgs, perSecond, want, horizon)
	}
	interval := rateInterval(perSecond)
	reply, err := rateScript.Run(ctx, rdb, []string{key}, interval, want, horizon.Microseconds()).Int64Slice()
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
