package rdb

// A webhook's attempts per hour by outcome, for the last 24 hours: what the admin API's
// GET /webhooks/{id}/stats serves (and the UI's chart draws).
//
// The circuit count (Count, internal/breaker), which every recorded attempt passes through beside its
// outcome, counts them in the webhook's hash {P:registry}:hourly:<webhook id>: field "s<h>" or "f<h>"
// counts the successful or failed attempts of hour h (Unix hours), "k<h>" the deliveries a
// transformation skipped (not attempted); field "ok" keeps the newest successful attempt's answer (Unix
// ms), which the circuit rule reads when a failure creates the webhook's circuit (count.lua), and no
// hour's cleanup drops. Counting is one HINCRBY per webhook
// and outcome in a count call (concurrent outcomes' calls are merged: a burst of one webhook's
// successes costs one); only the first count of a field (once per hour and outcome) also drops the
// fields of hours that have left the window (HKEYS, HDEL) and sets the key's TTL to HourlyTTL, so the
// hash never holds more than 2*(HourlySlots+1) small fields (a listpack) and expires at least a day
// after its last write. The read is one HGETALL. (Builds before this one kept a hash per shard,
// {P:s}:hourly:<webhook id>; those expire within HourlyTTL and are not read.)

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks/internal/types"
)

// HourlyStats returns a webhook's attempts per hour by outcome over the HourlySlots hours up to now,
// oldest first, the current hour last.
func HourlyStats(ctx context.Context, c redis.UniversalClient, keys Keys, webhookID string, now time.Time) ([]types.HourStats, error) {
	counts, err := c.HGetAll(ctx, keys.Hourly(webhookID)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	hourNow := now.Unix() / 3600
	out := make([]types.HourStats, HourlySlots)
	for i := range out {
		out[i].Hour = time.Unix((hourNow-int64(HourlySlots-1-i))*3600, 0).UTC()
	}
	for field, v := range counts {
		if len(field) < 2 || field[0] != 's' && field[0] != 'f' && field[0] != 'k' {
			continue
		}
		hour, err := strconv.ParseInt(field[1:], 10, 64)
		if err != nil || hour > hourNow || hour <= hourNow-HourlySlots {
			continue // corrupt, or an hour outside the window
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		switch h := &out[HourlySlots-1-int(hourNow-hour)]; field[0] {
		case 's':
			h.Success += n
		case 'f':
			h.Failed += n
		default:
			h.Skipped += n
		}
	}
	return out, nil
}
