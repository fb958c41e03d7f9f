package webhooks

// Probe now: an operator ends an open circuit's wait, so that its probe goes out at once rather than
// when the open period ends (the admin API's POST /webhooks/{id}/probe; operator only).
//
// Two steps, each one script on its own slot. First probeNowScript ends the open period in the
// registry's circuits hash (the probe itself is still taken as always, by acquireProbeScript, so at
// most one replica sends it). Then, in every shard whose queue of the webhook holds deliveries
// parked until the old end of the open period, wakeParkedScript makes up to probeNowBatch of them due
// (each checked pending and not in flight, as retry now checks one), and retimes the webhook's ready
// entry: the next worker pass (this process's at once: it is poked) takes one of them as the probe;
// its success closes the circuit and the others follow; its failure reopens the circuit, and the
// others are parked again, as after any failed probe. They are due probeNowDelay from now, not now:
// every replica's cached circuit (circuitCacheTTL) has by then seen the open period end, so no
// replica parks the webhook again on a stale read.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// probeNowBatch bounds how many parked deliveries of a webhook probe now makes due per shard;
	// the others (a backlog beyond it) stay parked until the old end of the open period.
	probeNowBatch = 256
	// probeNowDelay is how long after the call the parked deliveries are due: the life of a cached
	// circuit, so that no replica still sees the circuit open until its old time.
	probeNowDelay = circuitCacheTTL
)

// probeNowScript ends an open circuit's open period at now, unless a probe is held.
//
// KEYS[1] -> {P:registry}:circuits
// ARGV[1], ARGV[2] -> webhook id, now (ms)
// returns {probeGranted (the open period has ended), probeClosed or probeHeld; the circuit after it
// ("" if none); the end of the open period before it (ms, 0 if none)}
var probeNowScript = redis.NewScript(circuitLua + `
local now, c = tonumber(ARGV[2]), decode(redis.call('HGET', KEYS[1], ARGV[1]))
if not c or c[4] == 0 then return {` + strconv.Itoa(probeClosed) + `, c and encode(c) or '', 0} end
local was = c[3]
if c[5] > now then return {` + strconv.Itoa(probeHeld) + `, encode(c), was} end
if c[3] > now then
  c[3] = now
  redis.call('HSET', KEYS[1], ARGV[1], encode(c))
end
return {` + strconv.Itoa(probeGranted) + `, encode(c), was}
`)

// wakeParkedScript makes some of a webhook's queued deliveries in one shard due at a time: each
// candidate still in the queue, pending and not leased (an attempt in flight keeps its lease end);
// then the webhook's ready entry is due then too, if any was made due.
//
// KEYS[1] -> {P:s}:ready
// KEYS[2] -> {P:s}:q:<webhook_id>
// KEYS[2+j] -> {P:s}:rec:<h> of candidate j
// ARGV[1] -> when they are due (ms)
// ARGV[2] -> webhook id
// ARGV[2+j] -> candidate j's queue member
// returns how many candidates are due by then
var wakeParkedScript = redis.NewScript(`
local due, n = ARGV[1], 0
for j = 3, #KEYS do
  local member, rec = ARGV[j], redis.call('GET', KEYS[j])
  if rec and string.sub(rec, 18, 18) == '` + string(rune(statusPending)) + `' and string.sub(rec, 17, 17) ~= '` + string(rune(leaseHeld)) + `'
     and redis.call('ZSCORE', KEYS[2], member) then
    redis.call('ZADD', KEYS[2], 'XX', 'LT', due, member)
    n = n + 1
  end
end
if n > 0 then redis.call('ZADD', KEYS[1], 'LT', due, ARGV[2]) end
return n
`)

// errProbeRefused is a probe now that cannot be made: the circuit is closed, or its probe is in
// flight.
var errProbeRefused = errors.New("webhooks: no probe now")

// probeNow ends a webhook's open circuit's wait and makes its parked deliveries due, for the next
// worker to take one as the probe. It returns the circuit after it and how many deliveries it made
// due (0: none waits, and the next delivery the webhook gets is the probe). A closed circuit, or one
// whose probe is in flight, is refused with an error wrapping errProbeRefused; a disabled webhook with
// ErrWebhookDisabled (enable it first), an unknown one with ErrNotFound.
func (d *Dispatcher) probeNow(ctx context.Context, webhookID string) (Health, int, error) {
	wh, _, err := d.webhooks.load(ctx, webhookID)
	if err != nil {
		return Health{}, 0, err
	}
	if wh.Disabled {
		return Health{}, 0, fmt.Errorf("%w: webhook %s: enable it before probing it", ErrWebhookDisabled, webhookID)
	}
	now := d.now()
	reply, err := probeNowScript.Run(ctx, d.rdb, []string{d.circuits.key}, webhookID, now.UnixMilli()).Slice()
	if err == nil && len(reply) != 3 {
		err = fmt.Errorf("reply %v", reply)
	}
	if err != nil {
		return Health{}, 0, fmt.Errorf("webhooks: probe %s now: %w", webhookID, err)
	}
	h := circuitHealth(webhookID, reply[1], now)
	switch code, _ := reply[0].(int64); code {
	case probeClosed:
		return h, 0, fmt.Errorf("%w: the endpoint is not paused (its circuit is closed): deliveries go out as they come", errProbeRefused)
	case probeHeld:
		return h, 0, fmt.Errorf("%w: a probe is already in flight: its answer decides", errProbeRefused)
	}
	d.circuitCache.put(h, now)
	// Parked deliveries are due at the end of the open period as it was (or a recheck later).
	was, _ := reply[2].(int64)
	until := later(msTime(was), now).Add(probeRecheck)
	n, err := d.wakeParked(ctx, webhookID, until, now.Add(probeNowDelay))
	return h, n, err
}

// wakeParked makes due at due the deliveries of a webhook queued until until, at most probeNowBatch
// per shard: one round trip reads the candidates of every shard, one more runs each shard's
// wakeParkedScript (together). It pokes this Dispatcher's worker.
func (d *Dispatcher) wakeParked(ctx context.Context, webhookID string, until, due time.Time) (int, error) {
	if err := d.keys.load(ctx, d.rdb); err != nil {
		return 0, err
	}
	pipe := d.rdb.Pipeline()
	reads := make([]*redis.StringSliceCmd, d.keys.Shards)
	for s := range d.keys.Shards {
		reads[s] = pipe.ZRangeByScore(ctx, d.keys.queueKey(s, webhookID), &redis.ZRangeBy{Min: "-inf",
			Max: strconv.FormatInt(until.UnixMilli(), 10), Count: probeNowBatch})
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("webhooks: read the parked deliveries of %s: %w", webhookID, err)
	}
	var runs []scriptRun
	var shards []int
	for s, cmd := range reads {
		ids := cmd.Val()
		if len(ids) == 0 {
			continue
		}
		keys := []string{d.keys.readyKey(s), d.keys.queueKey(s, webhookID)}
		args := []any{due.UnixMilli(), webhookID}
		for _, member := range ids {
			keys, args = append(keys, d.keys.deliveryKey(s, member)), append(args, member)
		}
		runs, shards = append(runs, scriptRun{wakeParkedScript, keys, args}), append(shards, s)
	}
	if len(runs) == 0 {
		return 0, nil
	}
	total := 0
	var errs []error
	for i, cmd := range d.scripts.runTogether(ctx, runs...) {
		n, err := cmd.Int()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		total += n
		d.markShard(shards[i])
	}
	d.poke()
	if err := errors.Join(errs...); err != nil {
		return total, fmt.Errorf("webhooks: make the parked deliveries of %s due: %w", webhookID, err)
	}
	return total, nil
}
