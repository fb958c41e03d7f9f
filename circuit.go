package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"time"
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
	token := randomHex(tokenLen / 2)
	ok, got, err := d.circuits.acquireProbe(ctx, webhookID, now, token, d.lease)
	if err != nil {
		d.log.Warn("webhooks: take circuit probe", "webhook_id", webhookID, "error", err)
		return "", false
	}
	d.circuitCache.put(got, now)
	return token, ok
}

// parkOutcome is the outcome of a delivery not attempted because its webhook's circuit is open: it
// stays pending, due when the circuit may next be probed, with its retry step (its budget) unchanged.
func parkOutcome(rec *record, until time.Time, h Health) outcome {
	return outcome{id: rec.ID, token: rec.heldToken(), status: StatusPending, next: until, step: rec.step,
		code: rec.LastStatusCode, err: parkedReason(h, until)}
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

// trackCircuit counts a recorded attempt in its webhook's circuit: a failure that opens it (or a
// failed probe that reopens it) runs Hooks.CircuitOpened; a success that closes it runs
// Hooks.CircuitClosed. A success writes to Redis only when the circuit this Dispatcher sees has
// failures to forget, so healthy webhooks cost nothing here.
func (d *Dispatcher) trackCircuit(ctx context.Context, rec *record, o outcome) {
	if d.opts.BreakAfter < 0 || !o.attempted {
		return
	}
	now, id := d.now(), rec.WebhookID
	switch {
	case breaksCircuit(o):
		h, opened, err := d.circuits.recordFailure(ctx, id, now, o.probe, d.opts.BreakAfter, d.opts.BreakFor)
		if err != nil {
			d.log.Warn("webhooks: count failed attempt in circuit", "webhook_id", id, "error", err)
			return
		}
		d.circuitCache.put(h, now)
		d.disableIfFailingTooLong(ctx, id, h)
		if opened {
			d.log.Warn("webhooks: circuit opened", "webhook_id", id, "failures", h.ConsecutiveFailures,
				"open_until", h.OpenUntil)
			if f := d.opts.Hooks.CircuitOpened; f != nil {
				d.runHook("CircuitOpened", func() { f(id, h.OpenUntil) })
			}
		}
	case o.status == StatusSuccess:
		if h := d.circuit(ctx, id); h.State == CircuitClosed && h.ConsecutiveFailures == 0 && o.probe == "" {
			return
		}
		wasOpen, err := d.circuits.recordSuccess(ctx, id)
		if err != nil {
			d.log.Warn("webhooks: close circuit", "webhook_id", id, "error", err)
			return
		}
		d.circuitCache.put(Health{WebhookID: id, State: CircuitClosed}, now)
		if wasOpen {
			d.log.Info("webhooks: circuit closed", "webhook_id", id)
			if f := d.opts.Hooks.CircuitClosed; f != nil {
				d.runHook("CircuitClosed", func() { f(id) })
			}
		}
	}
}

// Health returns a webhook's circuit breaker as every replica sees it, or an error wrapping
// ErrNotFound for an unknown webhook.
func (r *WebhookRepo) Health(ctx context.Context, id string) (*Health, error) {
	if _, _, err := r.load(ctx, id); err != nil {
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
	return &h, nil
}

// peek returns the circuits of ids cached within circuitCacheTTL, without reading Redis: what Enqueue
// knows for free. A webhook missing from the map is not known to be open.
func (c *circuitCache) peek(now time.Time, ids []string) map[string]Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Health, len(ids))
	for _, id := range ids {
		if at, ok := c.at[id]; ok && now.Sub(at) < circuitCacheTTL {
			out[id] = c.entries[id]
		}
	}
	return out
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// disableIfFailingTooLong disables a webhook whose run of consecutive failed attempts, as the circuit
// counts it across every replica, began Options.DisableAfter ago or more: with the breaker on, this
// bounds how long deliveries wait parked (DisableAfter, plus one open period of at most MaxBreakFor).
func (d *Dispatcher) disableIfFailingTooLong(ctx context.Context, id string, h Health) {
	if d.opts.DisableAfter <= 0 || h.FailingSince.IsZero() || d.now().Sub(h.FailingSince) < d.opts.DisableAfter {
		return
	}
	d.disableWebhook(ctx, id, fmt.Sprintf("every attempt failed for %s", d.opts.DisableAfter))
}
