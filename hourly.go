package webhooks

// A webhook's attempts per hour by outcome, for the last 24 hours: what the admin API's
// GET /webhooks/{id}/stats serves (and the UI's chart draws).
//
// The circuit count (rdb.Count, internal/breaker), which every recorded attempt passes through beside its
// outcome, counts them in the webhook's hash {P:registry}:hourly:<webhook id>: field "s<h>" or "f<h>"
// counts the successful or failed attempts of hour h (Unix hours). Counting is one HINCRBY per webhook
// and outcome in a count call (concurrent outcomes' calls are merged: a burst of one webhook's
// successes costs one); only the first count of a field (once per hour and outcome) also drops the
// fields of hours that have left the window (HKEYS, HDEL) and sets the key's TTL to rdb.HourlyTTL, so the
// hash never holds more than 2*(rdb.HourlySlots+1) small fields (a listpack) and expires at least a day
// after its last write. The read is one HGETALL. (Builds before this one kept a hash per shard,
// {P:s}:hourly:<webhook id>; those expire within rdb.HourlyTTL and are not read.)

import (
	"context"
	"strconv"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// hourlyStats returns a webhook's attempts per hour by outcome over the last 24 hours, oldest first, the
// current hour last.
func (d *Dispatcher) hourlyStats(ctx context.Context, webhookID string) ([]HourStats, error) {
	counts, err := d.rdb.HGetAll(ctx, d.keys.Hourly(webhookID)).Result()
	if err != nil && !isNil(err) {
		return nil, err
	}
	now := d.now().Unix() / 3600
	out := make([]HourStats, rdb.HourlySlots)
	for i := range out {
		out[i].Hour = time.Unix((now-int64(rdb.HourlySlots-1-i))*3600, 0).UTC()
	}
	for field, v := range counts {
		if len(field) < 2 || field[0] != 's' && field[0] != 'f' {
			continue
		}
		hour, err := strconv.ParseInt(field[1:], 10, 64)
		if err != nil || hour > now || hour <= now-rdb.HourlySlots {
			continue // corrupt, or an hour outside the window
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		if h := &out[rdb.HourlySlots-1-int(now-hour)]; field[0] == 's' {
			h.Success += n
		} else {
			h.Failed += n
		}
	}
	return out, nil
}
