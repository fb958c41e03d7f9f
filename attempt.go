package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/internal/endpoint"
	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/smartdrop/webhooks/internal/signing"
	"github.com/smartdrop/webhooks/internal/worker"
)

// attempt sends one signed message for a leased delivery through its webhook's destination. It is made
// only if a whole attempt (Options.Timeout) still ends with a margin before the lease does, so a worker
// that takes the delivery over after the lease can never overlap it.
func (d *Dispatcher) attempt(ctx context.Context, wh *storedWebhook, rec *rdb.Record, body []byte) worker.AttemptResult {
	start := d.now()
	res := worker.AttemptResult{At: start}
	if rec.LeaseEnd.Sub(start) < worker.LeaseLeftToAttempt(d.lease, d.opts.Timeout) {
		// A whole attempt no longer fits in the lease (the claim's reply, or the pass before it, was
		// slow): leave it to a worker after the lease rather than cut it short.
		res.Err, res.Canceled = "too little of the lease was left to attempt it", true
		return res
	}
	secrets, err := signingKeys(&d.parsedSecrets, wh, start)
	if err != nil {
		res.Err = "webhook secret is unusable: " + err.Error()
		return res
	}
	u, dest, err := d.dests.target(wh)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	body, skip, err := d.transforms.reshape(ctx, wh, body)
	switch {
	case skip:
		res.Skipped = true
		return res
	case err != nil:
		res.Canceled = parent.Err() != nil
		res.NotSent, res.Err = true, err.Error()
		return res
	}
	m := &Message{URL: u, ID: rec.ID, Header: make(http.Header, 6+len(wh.Headers)), Body: body,
		EventType: rec.EventType, EventID: rec.EventID, Tenant: wh.Tenant, OrderKey: rec.OrderKey, WebhookID: wh.ID,
		Attempt: rec.Attempts + 1, Dial: d.dial}
	endpoint.SetHeaders(m.Header, wh.Headers) // first: the library's own headers cannot be overridden
	m.Header["Content-Type"] = []string{"application/json"}
	signing.SetHeaders(m.Header, rec.ID, start, body, secrets...)
	d.trace.SetHeader(ctx, m.Header, rec)
	res.Ticket = d.breaker.Sends().Start(wh.ID, start) // open until its outcome is counted (breaker.Sends)
	if dest == Destination(d.dests.http) {
		err = d.dests.http.SendAuth(ctx, m, wh.Auth) // with the webhook's endpoint authentication
	} else {
		err = dest.Send(ctx, m)
	}
	res.Answered = d.now()
	res.Dur = res.Answered.Sub(start)
	res.Code, res.Body = m.StatusCode, m.Response
	if len(res.Body) > maxHistoryBody {
		res.Body = res.Body[:maxHistoryBody]
	}
	if err != nil {
		res.Canceled = parent.Err() != nil
		res.Kind, res.RetryAfter = destination.Classify(err)
		res.Err = err.Error()
		return res
	}
	res.OK = true
	return res
}

// applyRecorded applies each outcome the script recorded (reply, or err for the whole write) to its
// in-memory record and runs its hooks, and sets errs for the others.
func (d *Dispatcher) applyRecorded(ctx context.Context, shard int, recs []*rdb.Record, outcomes []worker.Outcome, idx []int,
	reply []int64, err error, now time.Time, errs []error) {
	for j, i := range idx {
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("webhooks: record outcome of %s (%w): %w", outcomes[i].ID, ErrDeferred, err)
		case reply[j] != rdb.OutcomeRecorded:
			errs[i] = fmt.Errorf("webhooks: record outcome of %s: %w", outcomes[i].ID, ErrLeaseLost)
		default:
			outcomes[i].Apply(recs[i], now)
			if outcomes[i].Status == StatusPending {
				d.leaser.QueueLocal(shard, recs[i].WebhookID, recs[i].ID, outcomes[i].Next) // a retry for this worker
			}
			d.afterOutcome(ctx, recs[i], outcomes[i])
		}
	}
}

// settle records the outcomes of attempts on deliveries of one shard in one round trip, applies each
// recorded outcome to its in-memory record and runs the hooks. It returns one error per outcome, nil
// when recorded. An outcome whose attempt the caller abandoned is left to its lease.
func (d *Dispatcher) settle(ctx context.Context, shard int, recs []*rdb.Record, outcomes []worker.Outcome) []error {
	errs := make([]error, len(outcomes))
	now := d.now()
	writes := make([]rdb.OutcomeWrite, 0, len(outcomes))
	idx := make([]int, 0, len(outcomes))
	for i, o := range outcomes {
		if o.Unrecorded {
			errs[i] = fmt.Errorf("webhooks: delivery %s: %s; a worker attempts it after its lease: %w", o.ID, o.Err, ErrDeferred)
			if !o.Counted {
				d.countReleased(context.WithoutCancel(ctx), d.breaker.Sends().End(o.Ticket)) // not counted: it holds nothing back
			}
			continue
		}
		next := *recs[i] // the record as the outcome leaves it; applied in memory once recorded
		next.History = slices.Clip(next.History)
		o.Apply(&next, now)
		writes = append(writes, rdb.OutcomeWrite{ID: recs[i].ID, WebhookID: recs[i].WebhookID, Token: o.Token,
			Status: o.Status, Next: o.Next, Mode: o.ScheduleMode(), Record: next.Encode()})
		idx = append(idx, i)
	}
	if len(idx) == 0 {
		return errs
	}
	keys, args := rdb.OutcomeRun(d.keys, shard, now, writes)
	script, keys, args, extra := d.outcomeScriptFor(shard, recs, idx, keys, args)
	// The attempt is over whatever the caller's context says now: record it, retrying a write that
	// failed in transport while the lease lasts (the script is idempotent by token; failover.go).
	ctx = context.WithoutCancel(ctx)
	leaseEnd := worker.EarliestLeaseEnd(now.Add(d.lease), recs, idx)
	var reply []int64
	count := d.countOutcomes(now, outcomes, recs, idx)
	var kept []int // outcomes Redis did not take within the lease: kept for Run (worker.PendingOutcomes)
	defer func() { // after afterCount
		if !d.pending.KeepCopies(shard, recs, outcomes, kept, count.sent(), d.now()) {
			d.log.Warn("webhooks: outcomes dropped: MaxPendingOutcomes are kept for Redis already", "shard", shard, "outcomes", len(kept))
		}
	}()
	defer d.afterCount(ctx, count)
	err := d.retryWithinLease(ctx, leaseEnd, func(ctx context.Context) error {
		w := d.writeBesideCount(ctx, count, script, keys, args...)
		var err error
		if reply, err = w.Int64Slice(); err == nil && w.AckErr != nil {
			d.log.Warn("webhooks: outcome recorded but not acknowledged by its replicas", "shard", shard, "error", w.AckErr)
		}
		return err
	})
	if err != nil && rdb.Retryable(err) {
		kept = idx
	}
	if err == nil && len(reply) != len(idx)+extra {
		err = fmt.Errorf("unexpected reply of %d items", len(reply))
	}
	d.applyRecorded(ctx, shard, recs, outcomes, idx, reply, err, now, errs)
	if extra == 1 && err == nil && reply[len(reply)-1] > 0 {
		d.leaser.MarkShard(shard) // a final head queued its key's next delivery: send it at once
		d.wake.Poke()
	}
	return errs
}
