package webhooks

// A webhook's attempts per hour by outcome, for the last 24 hours: what the admin API's
// GET /webhooks/{id}/stats serves (and the UI's chart draws).
//
// The outcome script counts each recorded attempt in the shard's hash {P:s}:hourly:<webhook id>, a ring of
// hourlySlots hours: field "t<k>" is the hour (Unix hours) slot k holds, "s<k>" and "f<k>" its successful
// and failed attempts, k = hour mod hourlySlots. A slot holding an older hour is reset before it is
// counted into, so the hash never holds more than 3*hourlySlots small fields (a listpack), and it expires
// hourlyTTL after its last write. It costs the outcome script three or four commands on a key of its own
// slot, and no extra round trip; the read is one pipelined HGETALL per shard.

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// hourlySlots is how many hours the ring keeps, and how many GET /webhooks/{id}/stats serves.
	hourlySlots = 24
	// hourlyTTL is how long a webhook's hourly counters outlive their last write.
	hourlyTTL = 25 * time.Hour
)

// hourlyKey is a webhook's hourly attempt counters in a shard.
func (k keyspace) hourlyKey(shard int, webhookID string) string {
	return k.tag(shard) + ":hourly:" + webhookID
}

// luaCountHour is countHour(key, now, ok): counts one attempt at now (ms), successful or not, in the ring
// at key.
var luaCountHour = `
local function countHour(key, now, ok)
  local hour = math.floor(now / 3600000)
  local k = hour % ` + strconv.Itoa(hourlySlots) + `
  local h = string.format('%d', hour)
  if redis.call('HGET', key, 't' .. k) ~= h then
    redis.call('HSET', key, 't' .. k, h, 's' .. k, 0, 'f' .. k, 0)
  end
  if ok then redis.call('HINCRBY', key, 's' .. k, 1) else redis.call('HINCRBY', key, 'f' .. k, 1) end
  redis.call('PEXPIRE', key, ` + strconv.FormatInt(hourlyTTL.Milliseconds(), 10) + `)
end
`

// HourStats counts the attempts of one hour by outcome.
type HourStats struct {
	Hour    time.Time `json:"hour"` // the hour's start, UTC
	Success int64     `json:"success"`
	Failed  int64     `json:"failed"`
}

// hourlyStats returns a webhook's attempts per hour by outcome over the last 24 hours, oldest first, the
// current hour last, summed over every shard.
func (d *Dispatcher) hourlyStats(ctx context.Context, webhookID string) ([]HourStats, error) {
	if err := d.keys.load(ctx, d.rdb); err != nil {
		return nil, err
	}
	pipe := d.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, d.keys.shards)
	for s := range d.keys.shards {
		cmds[s] = pipe.HGetAll(ctx, d.keys.hourlyKey(s, webhookID))
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return nil, err
	}
	now := d.now().Unix() / 3600
	out := make([]HourStats, hourlySlots)
	for i := range out {
		out[i].Hour = time.Unix((now-int64(hourlySlots-1-i))*3600, 0).UTC()
	}
	for _, c := range cmds {
		m := c.Val()
		for k := range hourlySlots {
			slot := strconv.Itoa(k)
			hour, err := strconv.ParseInt(m["t"+slot], 10, 64)
			if err != nil || hour > now || hour <= now-hourlySlots {
				continue // empty, corrupt, or an hour outside the window
			}
			i := hourlySlots - 1 - int(now-hour)
			s, _ := strconv.ParseInt(m["s"+slot], 10, 64)
			f, _ := strconv.ParseInt(m["f"+slot], 10, 64)
			out[i].Success += s
			out[i].Failed += f
		}
	}
	return out, nil
}
