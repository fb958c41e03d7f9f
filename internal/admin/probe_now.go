package admin

// Probe now: an operator ends an open circuit's wait, so that its probe goes out at once rather than
// when the open period ends (the admin API's POST /webhooks/{id}/probe; operator only).
//
// Two steps, each one script on its own slot. First rdb.ProbeNow ends the open period in the
// registry's circuits hash (the probe itself is still taken as always, by rdb.AcquireProbe, so at
// most one replica sends it). Then, in every shard whose queue of the webhook holds deliveries
// parked until the old end of the open period, rdb.WakeParked makes up to ProbeNowBatch of them due
// (each checked pending and not in flight, as retry now checks one), and retimes the webhook's ready
// entry: the next worker pass (this process's at once: it is poked) takes one of them as the probe;
// its success closes the circuit and the others follow; its failure reopens the circuit, and the
// others are parked again, as after any failed probe. They are due ProbeNowDelay from now, not now:
// every replica's cached circuit (breaker.CacheTTL) has by then seen the open period end, so no
// replica parks the webhook again on a stale read.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/ratelimit"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

const (
	// ProbeNowBatch bounds how many parked deliveries of a webhook probe now makes due per shard;
	// the others (a backlog beyond it) stay parked until the old end of the open period.
	ProbeNowBatch = 256
	// ProbeNowDelay is how long after the call the parked deliveries are due: the life of a cached
	// circuit, so that no replica still sees the circuit open until its old time.
	ProbeNowDelay = breaker.CacheTTL
)

// Probe is the Dispatcher's ProbeNow: it ends a webhook's open circuit's wait and makes its parked
// deliveries due, for the next worker to take one as the probe. It returns the circuit after it and
// how many deliveries it made due (0: none waits, and the next delivery the webhook gets is the
// probe). A closed circuit, or one whose probe is in flight, is refused with an error wrapping
// types.ErrProbeRefused; a disabled webhook with types.ErrWebhookDisabled (enable it first), an
// unknown one with types.ErrNotFound. Each call on an enabled webhook takes a slot of its and its
// tenant's probe limiters first (ratelimit.Probes): refused, it wraps types.ErrActionsLimited and
// changes nothing.
func (b *Backend) Probe(ctx context.Context, webhookID string) (types.Health, int, error) {
	wh, err := b.WebhookRepo.Stored(ctx, webhookID)
	if err != nil {
		return types.Health{}, 0, err
	}
	if wh.Disabled {
		return types.Health{}, 0, fmt.Errorf("%w: webhook %s: enable it first", types.ErrWebhookDisabled, webhookID)
	}
	if err := ratelimit.Probes.Take(ctx, b.Client, b.Keys, wh.ID, wh.Tenant); err != nil {
		return types.Health{}, 0, err
	}
	now := b.Now()
	end, err := rdb.EndOpenPeriod(ctx, b.Client, b.Keys, webhookID, now)
	if err != nil {
		return types.Health{}, 0, fmt.Errorf("webhooks: probe %s now: %w", webhookID, err)
	}
	h := breaker.HealthOf(webhookID, end.Circuit, now)
	switch end.Code {
	case rdb.ProbeClosed:
		return h, 0, fmt.Errorf("%w: the endpoint is not paused: deliveries go out as they come", types.ErrProbeRefused)
	case rdb.ProbeHeld:
		return h, 0, fmt.Errorf("%w: its next try is already in flight: its answer decides", types.ErrProbeRefused)
	}
	b.Breaker.Put(h, now)
	// Parked deliveries are due at the end of the open period as it was (or a recheck later).
	until := types.Later(end.Was, now).Add(breaker.ProbeRecheck)
	n, err := b.wakeParked(ctx, webhookID, until, now.Add(ProbeNowDelay))
	return h, n, err
}

// wakeParked makes due at due the deliveries of a webhook queued until until, at most ProbeNowBatch
// per shard: one round trip reads the candidates of every shard (rdb.ReadParked), one more runs each
// shard's rdb.WakeParked (together). It tells the Dispatcher's worker (Woken, Poke).
func (b *Backend) wakeParked(ctx context.Context, webhookID string, until, due time.Time) (int, error) {
	if err := b.LoadKeys(ctx); err != nil {
		return 0, err
	}
	parked, err := rdb.ReadParked(ctx, b.Client, b.Keys, webhookID, until, ProbeNowBatch)
	if err != nil {
		return 0, err
	}
	var runs []rdb.ScriptRun
	var shards []int
	for s, ids := range parked {
		if len(ids) > 0 {
			runs, shards = append(runs, rdb.WakeParkedRun(b.Keys, s, webhookID, ids, due)), append(shards, s)
		}
	}
	if len(runs) == 0 {
		return 0, nil
	}
	total := 0
	var errs []error
	for i, cmd := range b.Scripts.RunTogether(ctx, runs...) {
		n, err := cmd.Int()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		total += n
		b.Woken(shards[i])
	}
	b.Poke()
	if err := errors.Join(errs...); err != nil {
		return total, fmt.Errorf("webhooks: make the parked deliveries of %s due: %w", webhookID, err)
	}
	return total, nil
}
