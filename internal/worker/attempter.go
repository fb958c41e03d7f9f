package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/ratelimit"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// AttempterConfig is what an Attempter attempts with: a Dispatcher's Redis, units and clock, and the
// root's part of an attempt (its request, its outcome's record and circuit count).
type AttempterConfig struct {
	Redis   redis.UniversalClient
	Keys    rdb.Keys
	Breaker *breaker.Breaker
	Flights *InFlight
	Bodies  *Bodies // of events the Dispatcher left to its worker lately
	Leaser  *Leaser // what Run's passes lease; it takes back the probes not sent
	Wake    *Wake   // poked when an attempt's slot frees

	Concurrency   int           // Run's attempts at once (Options.Concurrency)
	Lease         time.Duration // how long a lease holds a delivery
	Timeout       time.Duration // an attempt's (Options.Timeout)
	RetrySchedule []time.Duration
	Now           func() time.Time
	Log           *slog.Logger

	// Send makes an attempt's signed request to wh (the root's, within its trace span).
	Send func(ctx context.Context, wh *rdb.WebhookRecord, rec *rdb.Record, body []byte) AttemptResult
	// Settle records outcomes.
	Settle SettleFunc
	// CountNow counts an attempt's outcome in its webhook's circuit at once, and marks it counted.
	CountNow func(ctx context.Context, rec *rdb.Record, o *Outcome)
}

// Attempter attempts leased deliveries: it waits for a rate-limited webhook's slot, takes a slot of
// its MaxConcurrency, refuses what must not go out (a deleted or disabled webhook, an expired body),
// parks what an open circuit holds back, sends the request (AttempterConfig.Send) and decides the
// outcome by the retry schedule (Decide). ProcessDue's attempts (AttemptAll) and Run's (RunSlots) are
// its, and Dispatch's inline attempts take their MaxConcurrency slots of it. Safe for concurrent use.
type Attempter struct {
	cfg AttempterConfig
}

// NewAttempter returns the Attempter of cfg. It does no I/O.
func NewAttempter(cfg AttempterConfig) *Attempter { return &Attempter{cfg: cfg} }

// LeaseLeftToAttempt is how much of its lease a delivery must have left for an attempt to start: the
// whole attempt (timeout) and half the lease's margin beyond it.
func LeaseLeftToAttempt(lease, timeout time.Duration) time.Duration {
	return timeout + (lease-timeout)/2
}

// leftToAttempt is LeaseLeftToAttempt of the Attempter's lease and timeout.
func (a *Attempter) leftToAttempt() time.Duration {
	return LeaseLeftToAttempt(a.cfg.Lease, a.cfg.Timeout)
}

// Attempt attempts a leased delivery, or refuses to when its webhook is gone or disabled. A delivery
// whose webhook's circuit is open (and that is not its probe) is parked, not attempted.
func (a *Attempter) Attempt(ctx context.Context, j LeasedDelivery, body []byte) Outcome {
	rec, wh := j.Rec, j.Webhook
	switch {
	case wh == nil:
		return Refuse(rec, types.NotAttemptedWebhookDeleted)
	case wh.Disabled && !types.IsTestDelivery(&rec.Delivery):
		return Refuse(rec, types.NotAttemptedWebhookDisabled)
	case body == nil:
		return Refuse(rec, types.NotAttemptedBodyExpired)
	}
	if j.Probe == "" {
		if h := a.cfg.Breaker.Circuit(ctx, rec.WebhookID); h.State != types.CircuitClosed {
			return parkOutcome(rec, types.Later(h.OpenUntil, a.cfg.Now().Add(breaker.ProbeRecheck)), h)
		}
	}
	slot, ok := a.TakeConcurrencySlot(ctx, wh)
	if !ok {
		return WaitForSlot(rec, a.cfg.Now().Add(ConcurrencyRecheck))
	}
	res := a.cfg.Send(ctx, wh, rec, body)
	a.ReleaseConcurrencySlot(ctx, wh.ID, slot)
	o := Decide(rec, res, a.cfg.RetrySchedule, a.cfg.Lease, a.cfg.Now())
	o.Probe = j.Probe
	return o
}

// parkOutcome is the outcome of a delivery not attempted because its webhook's circuit is open: it
// stays pending, due when the circuit may next be probed, with its retry step (its budget) unchanged.
func parkOutcome(rec *rdb.Record, until time.Time, h types.Health) Outcome {
	o := HandBack(rec, until)
	o.Err = breaker.ParkedReason(h, until)
	return o
}

// waitRateSlot takes the rate-limit slot of an attempt to a rate-limited webhook and waits for it (at
// most rateHorizon). With no slot that near, the delivery goes back to its queue, due when one is free,
// its retry budget kept: the returned outcome says so, and ok is false.
func (a *Attempter) waitRateSlot(ctx context.Context, j LeasedDelivery) (Outcome, bool) {
	if j.Webhook == nil || j.Webhook.RateLimit <= 0 || j.Webhook.Disabled {
		return Outcome{}, true
	}
	key, limit := a.cfg.Keys.Rate(j.Webhook.ID), j.Webhook.RateLimit
	delays, retryIn, err := ratelimit.Take(ctx, a.cfg.Redis, key, limit, 1, rateHorizon)
	// A process stalled past its slot (GC, a busy CPU) would send late, next to the slots granted after
	// it: take a new slot instead, a few times at most.
	for try := 0; err == nil && len(delays) > 0 && try < 3; try++ {
		at := time.Now().Add(delays[0])
		time.Sleep(delays[0])
		if time.Since(at) < ratelimit.Interval(limit)/4 {
			return Outcome{}, true
		}
		delays, retryIn, err = ratelimit.Take(ctx, a.cfg.Redis, key, limit, 1, rateHorizon)
	}
	if err != nil || len(delays) == 0 {
		if err != nil {
			a.cfg.Log.Warn("webhooks: rate limit", "webhook_id", j.Webhook.ID, "error", err)
			retryIn = time.Second
		}
		return HandBack(j.Rec, a.cfg.Now().Add(max(retryIn, MinWait))), false
	}
	time.Sleep(delays[0])
	return Outcome{}, true
}
