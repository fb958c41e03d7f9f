package webhooks

import (
	"context"
	"fmt"

	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
)

// outcomeScriptFor returns the script that records the outcomes idx of recs, given rdb.Outcome's
// keys and arguments (rdb.OutcomeRun), with its keys and arguments, and how many reply items it
// gives beyond one per outcome: rdb.Outcome's (0), or rdb.OrderedOutcome's when one of them is of
// an ordered delivery (1: how many deliveries it queued).
func (d *Dispatcher) outcomeScriptFor(shard int, recs []*rdb.Record, idx []int, keys []string, args []any) (*redis.Script, []string, []any, int) {
	ordered := false
	for _, i := range idx {
		ordered = ordered || recs[i].OrderKey != ""
	}
	if !ordered {
		return rdb.Outcome, keys, args, 0
	}
	seqKeys, seqArgs := d.orderedOutcomes(shard, recs, idx)
	return rdb.OrderedOutcome, append(keys, seqKeys...), append(args, seqArgs...), 1
}

// orderedOutcomes returns the keys and arguments rdb.OrderedOutcome takes beyond rdb.Outcome's
// for the outcomes idx of recs.
func (d *Dispatcher) orderedOutcomes(shard int, recs []*rdb.Record, idx []int) ([]string, []any) {
	mode := rdb.OrderOnFinal
	if d.opts.BlockKeyOnFailure {
		mode = rdb.OrderOnSuccess
	}
	keys := make([]string, 0, len(idx)+1)
	modes, members := make([]any, 0, 2*len(idx)+1), make([]any, 0, len(idx))
	for _, i := range idx {
		r := recs[i]
		if r.OrderKey == "" {
			keys, modes, members = append(keys, d.keys.Queue(shard, r.WebhookID)), append(modes, rdb.OrderNone), append(members, "")
			continue
		}
		keys = append(keys, d.keys.Seq(shard, r.WebhookID, r.OrderKey))
		modes, members = append(modes, mode), append(members, blockedMember(r.WebhookID, r.OrderKey))
	}
	return append(keys, d.keys.Blocked(shard)), append(append(modes, members...), d.opts.Retention.Milliseconds())
}

// redeliverScriptFor returns the script, keys and arguments that reset rec (rdb.Redeliver's keys
// and arguments given): rdb.OrderedRedeliver's for an ordered delivery, rdb.Redeliver's for
// another.
func (d *Dispatcher) redeliverScriptFor(shard int, wh *storedWebhook, rec *rdb.Record, renewed *rdb.Record, keys []string, args []any) (*redis.Script, []string, []any) {
	if rec.OrderKey == "" {
		return rdb.Redeliver, keys, args
	}
	keys[2] = d.keys.OrderedEvent(shard, rdb.ScopedEventID(wh.Tenant, rec.EventID))
	keys = append(keys, d.keys.Seq(shard, rec.WebhookID, rec.OrderKey), d.keys.Blocked(shard), d.keys.Inline(shard))
	args = append(args, waitingRecord(renewed).Encode(), blockedMember(rec.WebhookID, rec.OrderKey))
	return rdb.OrderedRedeliver, keys, args
}

// redeliveredBehind is Redeliver's error for a delivery the redeliver script did not reset for an
// attempt now: nil when it did not reset it at all, else (an ordered delivery reset behind its key's
// head, rdb.RedeliverWaiting) one wrapping ErrDeferred, once the event's marker is extended as the
// reset extended its record.
func (d *Dispatcher) redeliveredBehind(ctx context.Context, tenant string, rec *rdb.Record, reset int64) error {
	if reset != rdb.RedeliverWaiting {
		return nil
	}
	d.extendOrderMarker(ctx, tenant, rec)
	return fmt.Errorf("webhooks: redeliver %s: queued behind earlier deliveries of order key %q: %w", rec.ID, rec.OrderKey, ErrDeferred)
}

// extendOrderMarker keeps an ordered event's marker at least as long as its records once one was
// redelivered (best effort: a marker that expires early only lets the id be dispatched again with
// another key).
func (d *Dispatcher) extendOrderMarker(ctx context.Context, tenant string, rec *rdb.Record) {
	if rec.OrderKey == "" {
		return
	}
	scoped := rdb.ScopedEventID(tenant, rec.EventID)
	ttl := (d.opts.Retention + markerSlack).Milliseconds()
	if err := d.rdb.Do(ctx, "PEXPIRE", d.keys.Event(d.keys.ShardOf(scoped), scoped), ttl, "GT").Err(); err != nil {
		d.log.Warn("webhooks: extend order marker", "delivery_id", rec.ID, "error", err)
	}
}
