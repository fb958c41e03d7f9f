package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/worker"

	"github.com/redis/go-redis/v9"
)

// The circuit breaker's part in delivery: how Dispatch, the worker and settle use the breaker
// (internal/breaker, the rule and the circuits' state), and what follows its counts here: hooks,
// operational events, disabling a webhook.

// circuitCount is the circuit write of one settle: the attempted outcomes it records, counted by
// rdb.Count in the same pipeline as the outcome script (the circuits hash is in the registry's slot,
// not the shard's, so it is a script of its own), so that counting costs a healthy webhook no round
// trip of its own.
type circuitCount struct {
	now  time.Time
	outs []breaker.Outcome
	ends []attemptEnd
	keys []string
	args []any
	cmd  *redis.Cmd // the last try's reply; nil before the first
}

// attemptEnd is what the in-flight limit learns from an attempt.
type attemptEnd struct {
	success bool
	took    time.Duration
}

// countOutcomes is the circuit write for the outcomes settle records (those of idx), nil when none is
// counted now (an attempted or skipped one: a skip is counted in its webhook's hourly counters only).
// It is made with the breaker on or off: the circuit's run of failures is what disables a webhook
// failing for DisableAfter (with the breaker off, the count never opens the circuit). A failure that an
// attempt of this process sent before its answer still holds back (breaker.Sends) is marked counted
// and left out: it is counted once released, by whoever releases it; the failures this write releases
// are counted in it, after its own.
func (d *Dispatcher) countOutcomes(now time.Time, outcomes []worker.Outcome, recs []*rdb.Record, idx []int) *circuitCount {
	cc := &circuitCount{now: now, outs: make([]breaker.Outcome, 0, len(idx)), ends: make([]attemptEnd, 0, len(idx))}
	var released []breaker.Held
	for _, i := range idx {
		o := &outcomes[i]
		skipped := o.Status == StatusSkipped // counted per hour, never in the circuit
		if (!o.Attempted && !skipped) || o.Counted {
			continue
		}
		kind := breaker.Kind(o.Status == StatusSuccess, o.Kind)
		if skipped {
			kind = rdb.CountSkipped
		}
		out := breaker.Outcome{WebhookID: recs[i].WebhookID, Kind: kind, Probe: o.Probe, Answered: o.Answered,
			Sent: o.Ticket.Sent, Ticket: o.Ticket}
		end := attemptEnd{success: kind == rdb.CountSuccess, took: o.Attempt.Duration}
		if kind == rdb.CountFailure || kind == rdb.CountRejected {
			held, rel := d.breaker.Sends().Hold(o.Ticket, &out, end)
			released = append(released, rel...)
			if held {
				o.Counted = true
				continue
			}
		}
		cc.add(out, end)
	}
	for _, h := range released {
		cc.add(h.Outcome, h.Data.(attemptEnd))
	}
	if len(cc.outs) == 0 {
		return nil
	}
	cc.keys, cc.args = d.breaker.CountArgs(now, cc.outs)
	return cc
}

// add adds an outcome to the count.
func (cc *circuitCount) add(o breaker.Outcome, end attemptEnd) {
	cc.outs = append(cc.outs, o)
	cc.ends = append(cc.ends, end)
}

// countNow counts an attempt's outcome in its webhook's circuit at once, on its own: on the count lane,
// where the counts of attempts ending while one is sent wait for the next and go out merged into one
// script run (mergeCounts), in the order they ended. It marks the outcome counted: for an outcome whose
// record waits for others' to be written with it (a worker.OutcomeBatch). A failure held back by an
// attempt sent before its answer (breaker.Sends) is counted when released.
func (d *Dispatcher) countNow(ctx context.Context, rec *rdb.Record, o *worker.Outcome) {
	if !o.Attempted {
		return
	}
	outs := []worker.Outcome{*o}
	cc := d.countOutcomes(d.now(), outs, []*rdb.Record{rec}, []int{0})
	o.Counted = outs[0].Counted
	if cc == nil {
		return
	}
	o.Counted = true
	cc.cmd = d.counts.Run(ctx, rdb.Count, cc.keys, cc.args...)
	d.afterCount(ctx, cc)
}

// countReleased counts, on the count lane, the failures an attempt's end released (breaker.Sends).
func (d *Dispatcher) countReleased(ctx context.Context, released []breaker.Held) {
	if len(released) == 0 {
		return
	}
	cc := &circuitCount{now: d.now()}
	for _, h := range released {
		cc.add(h.Outcome, h.Data.(attemptEnd))
	}
	cc.keys, cc.args = d.breaker.CountArgs(cc.now, cc.outs)
	cc.cmd = d.counts.Run(ctx, rdb.Count, cc.keys, cc.args...)
	d.afterCount(ctx, cc)
}

// sent reports whether the count ran (or failed for a reason another try would not change).
func (cc *circuitCount) sent() bool {
	return cc == nil || (cc.cmd != nil && !rdb.Retryable(cc.cmd.Err()))
}

// writeBesideCount runs an outcome write as writeAcked does and, until it has been sent, the circuit
// count cc in the same pipeline. Under ReplicaAcks the outcome write has a pipeline of its own (with its
// WAIT), and the count follows it.
func (d *Dispatcher) writeBesideCount(ctx context.Context, cc *circuitCount, script *redis.Script, keys []string, args ...any) rdb.AckedWrite {
	switch {
	case cc.sent():
		return d.writeAcked(ctx, script, keys, args...)
	case d.opts.ReplicaAcks > 0:
		w := d.writeAcked(ctx, script, keys, args...)
		cc.cmd = d.scripts.Run(ctx, rdb.Count, cc.keys, cc.args...)
		return w
	}
	cmds := d.scripts.RunTogether(ctx, rdb.ScriptRun{Script: script, Keys: keys, Args: args}, rdb.ScriptRun{Script: rdb.Count, Keys: cc.keys, Args: cc.args})
	cc.cmd = cmds[1]
	return rdb.AckedWrite{Cmd: cmds[0]}
}

// afterCount applies a circuit count's reply: it caches each circuit as the count left it, and tells
// the Notifier of each count (internal/notify: the circuit's hooks and operational events, and
// disabling a webhook whose run of failures began Options.DisableAfter ago). A count lost in
// transport is sent once more on its own. Then the failures its successes held back are counted.
func (d *Dispatcher) afterCount(ctx context.Context, cc *circuitCount) {
	if cc == nil {
		return
	}
	for i, o := range cc.outs {
		if o.Kind != rdb.CountSkipped {
			d.flights.Observe(o.WebhookID, cc.ends[i].success, cc.ends[i].took)
		}
	}
	if !cc.sent() { // not run, or lost in transport: once more, on its own
		cc.cmd = d.scripts.Run(ctx, rdb.Count, cc.keys, cc.args...)
	}
	defer d.countReleased(ctx, d.breaker.Sends().Counted(cc.outs))
	events, err := d.breaker.Counted(cc.cmd, cc.now, cc.outs)
	if err != nil {
		d.log.Warn("webhooks: count attempts in circuits", "error", err)
		return
	}
	for i, ev := range events {
		if kind := cc.outs[i].Kind; kind != rdb.CountSkipped {
			d.notify.Counted(ctx, cc.outs[i].WebhookID, ev, kind != rdb.CountSuccess, cc.now)
		}
	}
}

// Health returns a webhook's circuit breaker as every replica sees it (CircuitDisabled for a disabled
// webhook: nothing goes out, no probe either), or an error wrapping ErrNotFound for an unknown webhook.
func (r *WebhookRepo) Health(ctx context.Context, id string) (*Health, error) {
	wh, _, err := r.load(ctx, id)
	if err != nil {
		return nil, err
	}
	hs, err := r.circuits.Read(ctx, r.now(), id)
	if err != nil {
		return nil, fmt.Errorf("webhooks: read circuit of %s: %w", id, err)
	}
	h := hs[id]
	if h.State == "" {
		h = Health{WebhookID: id, State: CircuitClosed}
	}
	return api.ViewHealth(&wh.Webhook, &h), nil
}

// newBreaker is the circuit breaker of d, on client.
func newBreaker(client redis.UniversalClient, d *Dispatcher) *breaker.Breaker {
	return breaker.New(breaker.Config{Client: client, Keys: d.keys, BreakAfter: d.opts.BreakAfter, BreakFor: d.opts.BreakFor,
		ProbeHold: d.lease, Now: func() time.Time { return d.now() }, Log: d.log})
}
