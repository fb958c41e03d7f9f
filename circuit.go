package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
)

// The circuit breaker's part in delivery: what Dispatch, the worker and settle ask of the circuit
// state kept by breaker.go.

// circuit returns a webhook's circuit as this Dispatcher sees it: cached for up to 250ms, read from
// Redis on a miss. When the breaker is off, or its state cannot be read, the circuit is closed.
func (d *Dispatcher) circuit(ctx context.Context, webhookID string) Health {
	return d.circuitsOf(ctx, []string{webhookID})[webhookID]
}

// circuitsOf is circuit for several webhooks, with at most one read of Redis.
func (d *Dispatcher) circuitsOf(ctx context.Context, ids []string) map[string]Health {
	out := make(map[string]Health, len(ids))
	if d.opts.BreakAfter >= 0 && len(ids) > 0 {
		hs, err := d.circuitCache.get(ctx, d.circuits, d.now(), ids)
		if err != nil {
			d.log.Warn("webhooks: read circuits", "error", err)
		}
		for id, h := range hs {
			out[id] = h
		}
	}
	for _, id := range ids {
		if out[id].State == "" {
			out[id] = Health{WebhookID: id, State: CircuitClosed}
		}
	}
	return out
}

// tryProbe takes the probe of an open circuit whose open period has ended, and returns its token.
func (d *Dispatcher) tryProbe(ctx context.Context, webhookID string, now time.Time, h Health) (string, bool) {
	if now.Before(h.OpenUntil) {
		return "", false
	}
	token := randomHex(rdb.TokenLen / 2)
	ok, got, err := d.circuits.acquireProbe(ctx, webhookID, now, token, d.lease)
	if err != nil {
		d.log.Warn("webhooks: take circuit probe", "webhook_id", webhookID, "error", err)
		return "", false
	}
	d.circuitCache.put(got, now)
	return token, ok
}

// releaseUnusedProbes gives back the probes that takes took but whose leases leased nothing
// (rdb.ReleaseProbe): a probe held for a pass that sends nothing would hold every delivery of its
// webhook back for a lease.
func (d *Dispatcher) releaseUnusedProbes(ctx context.Context, takes []take, jobs []leasedDelivery) {
	used := map[string]bool{}
	for _, j := range jobs {
		used[j.probe] = true
	}
	unused := map[string][]int{} // probe -> the shards it was taken for (a webhook due in several has one probe)
	var order []take
	for _, tk := range takes {
		if tk.probe == "" || used[tk.probe] {
			continue
		}
		if unused[tk.probe] == nil {
			order = append(order, tk)
		}
		unused[tk.probe] = append(unused[tk.probe], tk.shard)
	}
	for _, tk := range order {
		d.releaseProbe(ctx, tk.id, tk.probe, unused[tk.probe]...)
	}
}

// releaseProbe gives back a webhook's probe that sent nothing (rdb.ReleaseProbe): the next pass may
// take it at once, instead of a lease later. Then it lowers the webhook's ready score to now in shards
// (ZADD XX LT): a worker that found the probe held may have parked the webhook there (chooseTakes),
// its park landing after the delivery was handed back; every park is followed by another try for the
// probe, and every release by this, so the last park is always undone while the probe is free.
func (d *Dispatcher) releaseProbe(ctx context.Context, webhookID, token string, shards ...int) {
	ctx = context.WithoutCancel(ctx)
	if err := rdb.ReleaseProbe.Run(ctx, d.rdb, []string{d.circuits.key}, webhookID, token).Err(); err != nil {
		d.log.Warn("webhooks: give back an unused probe", "webhook_id", webhookID, "error", err)
	}
	d.circuitCache.forget(webhookID)
	if len(shards) == 0 {
		return
	}
	now := float64(d.now().UnixMilli())
	pipe := d.rdb.Pipeline()
	for _, s := range shards {
		pipe.ZAddArgs(ctx, d.keys.Ready(s), redis.ZAddArgs{XX: true, LT: true, Members: []redis.Z{{Score: now, Member: webhookID}}})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		d.log.Warn("webhooks: unpark a webhook whose probe was given back", "webhook_id", webhookID, "error", err)
	}
}

// parkOutcome is the outcome of a delivery not attempted because its webhook's circuit is open: it
// stays pending, due when the circuit may next be probed, with its retry step (its budget) unchanged.
func parkOutcome(rec *rdb.Record, until time.Time, h Health) outcome {
	o := handBack(rec, until)
	o.err = parkedReason(h, until)
	return o
}

// parkedReason is the LastError of a parked delivery.
func parkedReason(h Health, until time.Time) string {
	return fmt.Sprintf("circuit open after %d consecutive failed attempts: parked until %s, retry budget kept",
		h.ConsecutiveFailures, until.UTC().Format(time.RFC3339))
}

// breaksCircuit reports whether an attempt counts as a failure for the circuit: a timeout or a
// connection error (no status), a 5xx or a 429.
func breaksCircuit(o outcome) bool {
	return o.attempted && (o.code == 0 || o.code >= 500 || o.code == http.StatusTooManyRequests)
}

// circuitCount is the circuit write of one settle: the attempted outcomes it records, counted by
// rdb.Count in the same pipeline as the outcome script (the circuits hash is in the registry's slot,
// not the shard's, so it is a script of its own), so that counting costs a healthy webhook no round
// trip of its own.
type circuitCount struct {
	now  time.Time
	outs []countedOutcome
	ends []attemptEnd
	keys []string
	args []any
	cmd  *redis.Cmd // the last try's reply; nil before the first
}

// attemptEnd is what the in-flight cap learns from an attempt.
type attemptEnd struct {
	success bool
	took    time.Duration
}

// countOutcomes is the circuit write for the outcomes settle records (those of idx), nil when none was
// attempted. It is made with the breaker on or off: the circuit's run of failures is what disables a
// webhook failing for DisableAfter (with the breaker off, the count never opens the circuit).
func (d *Dispatcher) countOutcomes(now time.Time, outcomes []outcome, recs []*rdb.Record, idx []int) *circuitCount {
	cc := &circuitCount{now: now}
	for _, i := range idx {
		o := outcomes[i]
		if !o.attempted || o.counted {
			continue
		}
		kind := rdb.CountRejected
		switch {
		case o.status == StatusSuccess:
			kind = rdb.CountSuccess
		case breaksCircuit(o):
			kind = rdb.CountFailure
		}
		cc.outs = append(cc.outs, countedOutcome{webhookID: recs[i].WebhookID, kind: kind, probe: o.probe,
			answered: o.answered})
		cc.ends = append(cc.ends, attemptEnd{success: kind == rdb.CountSuccess, took: o.attempt.Duration})
	}
	if len(cc.outs) == 0 {
		return nil
	}
	cc.keys, cc.args = d.circuits.countArgs(now, d.opts.BreakAfter, d.opts.BreakFor, cc.outs)
	return cc
}

// countNow counts an attempt's outcome in its webhook's circuit at once, on its own: on the count lane,
// where the counts of attempts ending while one is sent wait for the next and go out merged into one
// script run (mergeCounts), in the order they ended. It marks the outcome counted: for an outcome whose
// record waits for others' to be written with it (a worker's outcomeBatch). The circuit's count is of
// attempts in the order they end; an outcome held back by its batch would be counted behind attempts
// that ended after it, and a run of failures could appear that no receiver answered.
func (d *Dispatcher) countNow(ctx context.Context, rec *rdb.Record, o *outcome) {
	if !o.attempted {
		return
	}
	cc := d.countOutcomes(d.now(), []outcome{*o}, []*rdb.Record{rec}, []int{0})
	if cc == nil {
		return
	}
	o.counted = true
	cc.cmd = d.counts.Run(ctx, rdb.Count, cc.keys, cc.args...)
	d.afterCount(ctx, cc)
}

// failingNow reports whether webhookID's circuit, as this Dispatcher last saw it (within the cache's
// TTL), holds failures or is open. Then an inline attempt's count goes out as it ends, on the count
// lane (countNow), not with its outcome's write: its successes reach the circuit in the same lane and
// order as the worker's attempts' counts, where a success that waits behind other outcome writes could
// let failures answered after it be counted as a run. A healthy webhook's count still rides with the
// outcome's write, at no round trip of its own.
func (d *Dispatcher) failingNow(webhookID string) bool {
	h, ok := d.circuitCache.peek(d.now(), []string{webhookID})[webhookID]
	return ok && (h.ConsecutiveFailures > 0 || h.State != CircuitClosed)
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

// afterCount applies a circuit count's reply: it caches each circuit as the count left it, runs
// Hooks.CircuitOpened for a failure that opened a circuit (or a failed probe that reopened it) and
// Hooks.CircuitClosed for a success that closed one, and disables a webhook whose run of failures
// began Options.DisableAfter ago. A count lost in transport is sent once more on its own.
func (d *Dispatcher) afterCount(ctx context.Context, cc *circuitCount) {
	if cc == nil {
		return
	}
	for i, o := range cc.outs {
		d.flights.Observe(o.webhookID, cc.ends[i].success, cc.ends[i].took)
	}
	if !cc.sent() { // not run, or lost in transport: once more, on its own
		cc.cmd = d.scripts.Run(ctx, rdb.Count, cc.keys, cc.args...)
	}
	events, err := countReply(cc.cmd, cc.now, cc.outs)
	if err != nil {
		d.log.Warn("webhooks: count attempts in circuits", "error", err)
		return
	}
	for i, ev := range events {
		id, h := cc.outs[i].webhookID, ev.health
		d.circuitCache.put(h, cc.now)
		switch {
		case ev.opened:
			d.log.Warn("webhooks: circuit opened", "webhook_id", id, "failures", h.ConsecutiveFailures, "open_until", h.OpenUntil)
			if f := d.opts.Hooks.CircuitOpened; f != nil {
				d.runHook("CircuitOpened", func() { f(id, h.OpenUntil) })
			}
			d.circuitChanged(ctx, EventCircuitOpened, id, h, cc.now)
		case ev.closed:
			d.log.Info("webhooks: circuit closed", "webhook_id", id)
			if f := d.opts.Hooks.CircuitClosed; f != nil {
				d.runHook("CircuitClosed", func() { f(id) })
			}
			d.circuitChanged(ctx, EventCircuitClosed, id, h, cc.now)
		}
		if cc.outs[i].kind != rdb.CountSuccess {
			d.warnIfFailing(ctx, id, h)
			d.disableIfFailingTooLong(ctx, id, h)
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
	hs, err := r.circuits.read(ctx, r.now(), id)
	if err != nil {
		return nil, fmt.Errorf("webhooks: read circuit of %s: %w", id, err)
	}
	h := hs[id]
	if h.State == "" {
		h = Health{WebhookID: id, State: CircuitClosed}
	}
	return viewHealth(&wh.Webhook, &h), nil
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
