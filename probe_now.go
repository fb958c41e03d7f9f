package webhooks

// Probe now: an operator ends an open circuit's wait, so that its probe goes out at once rather than
// when the open period ends (the admin API's POST /webhooks/{id}/probe; operator only).
//
// Two steps, each one script on its own slot. First rdb.ProbeNow ends the open period in the
// registry's circuits hash (the probe itself is still taken as always, by rdb.AcquireProbe, so at
// most one replica sends it). Then, in every shard whose queue of the webhook holds deliveries
// parked until the old end of the open period, rdb.WakeParked makes up to probeNowBatch of them due
// (each checked pending and not in flight, as retry now checks one), and retimes the webhook's ready
// entry: the next worker pass (this process's at once: it is poked) takes one of them as the probe;
// its success closes the circuit and the others follow; its failure reopens the circuit, and the
// others are parked again, as after any failed probe. They are due probeNowDelay from now, not now:
// every replica's cached circuit (breaker.CacheTTL) has by then seen the open period end, so no
// replica parks the webhook again on a stale read.

import (
	"context"
	"errors"
	"fmt"
	"github.com/smartdrop/webhooks/internal/types"
	"github.com/smartdrop/webhooks/internal/worker"
	"strconv"
	"time"

	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
)

const (
	// probeNowBatch bounds how many parked deliveries of a webhook probe now makes due per shard;
	// the others (a backlog beyond it) stay parked until the old end of the open period.
	probeNowBatch = 256
	// probeNowDelay is how long after the call the parked deliveries are due: the life of a cached
	// circuit, so that no replica still sees the circuit open until its old time.
	probeNowDelay = breaker.CacheTTL
)

// ProbeNow ends the wait of a webhook's open circuit: its parked deliveries are made due, and the next
// attempt is the circuit's probe, whose success closes it. It returns the circuit as it is after the
// call. A closed circuit, or one whose probe is in flight, is refused with an error wrapping
// ErrProbeRefused; a disabled webhook with ErrWebhookDisabled (enable it first); an unknown one with
// ErrNotFound.
func (d *Dispatcher) ProbeNow(ctx context.Context, webhookID string) (*Health, error) {
	h, _, err := d.probeNow(ctx, webhookID)
	if err != nil && h.WebhookID == "" {
		return nil, err
	}
	return &h, err
}

// probeNow ends a webhook's open circuit's wait and makes its parked deliveries due, for the next
// worker to take one as the probe. It returns the circuit after it and how many deliveries it made
// due (0: none waits, and the next delivery the webhook gets is the probe). A closed circuit, or one
// whose probe is in flight, is refused with an error wrapping ErrProbeRefused; a disabled webhook with
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
	reply, err := rdb.ProbeNow.Run(ctx, d.rdb, []string{d.keys.Circuits()}, webhookID, now.UnixMilli()).Slice()
	if err == nil && len(reply) != 3 {
		err = fmt.Errorf("reply %v", reply)
	}
	if err != nil {
		return Health{}, 0, fmt.Errorf("webhooks: probe %s now: %w", webhookID, err)
	}
	h := breaker.HealthOf(webhookID, reply[1], now)
	switch code, _ := reply[0].(int64); code {
	case rdb.ProbeClosed:
		return h, 0, fmt.Errorf("%w: the endpoint is not paused (its circuit is closed): deliveries go out as they come", ErrProbeRefused)
	case rdb.ProbeHeld:
		return h, 0, fmt.Errorf("%w: a probe is already in flight: its answer decides", ErrProbeRefused)
	}
	d.breaker.Put(h, now)
	// Parked deliveries are due at the end of the open period as it was (or a recheck later).
	was, _ := reply[2].(int64)
	until := types.Later(rdb.MilliTime(was), now).Add(worker.ProbeRecheck)
	n, err := d.wakeParked(ctx, webhookID, until, now.Add(probeNowDelay))
	return h, n, err
}

// wakeParked makes due at due the deliveries of a webhook queued until until, at most probeNowBatch
// per shard: one round trip reads the candidates of every shard, one more runs each shard's
// rdb.WakeParked (together). It pokes this Dispatcher's worker.
func (d *Dispatcher) wakeParked(ctx context.Context, webhookID string, until, due time.Time) (int, error) {
	if err := loadKeys(ctx, d.keys, d.rdb); err != nil {
		return 0, err
	}
	pipe := d.rdb.Pipeline()
	reads := make([]*redis.StringSliceCmd, d.keys.Shards)
	for s := range d.keys.Shards {
		reads[s] = pipe.ZRangeByScore(ctx, d.keys.Queue(s, webhookID), &redis.ZRangeBy{Min: "-inf",
			Max: strconv.FormatInt(until.UnixMilli(), 10), Count: probeNowBatch})
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("webhooks: read the parked deliveries of %s: %w", webhookID, err)
	}
	var runs []rdb.ScriptRun
	var shards []int
	for s, cmd := range reads {
		ids := cmd.Val()
		if len(ids) == 0 {
			continue
		}
		keys := []string{d.keys.Ready(s), d.keys.Queue(s, webhookID)}
		args := []any{due.UnixMilli(), webhookID}
		for _, member := range ids {
			keys, args = append(keys, d.keys.Delivery(s, member)), append(args, member)
		}
		runs, shards = append(runs, rdb.ScriptRun{Script: rdb.WakeParked, Keys: keys, Args: args}), append(shards, s)
	}
	if len(runs) == 0 {
		return 0, nil
	}
	total := 0
	var errs []error
	for i, cmd := range d.scripts.RunTogether(ctx, runs...) {
		n, err := cmd.Int()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		total += n
		d.leaser.MarkShard(shards[i])
	}
	d.wake.Poke()
	if err := errors.Join(errs...); err != nil {
		return total, fmt.Errorf("webhooks: make the parked deliveries of %s due: %w", webhookID, err)
	}
	return total, nil
}
