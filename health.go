package webhooks

// A webhook's health: the runs of failed attempts kept per shard by the outcome script, and the
// auto-disable they drive (410 Gone at once, Options.DisableAfter of failures with no success).

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// lastSuccess is the latest success of the webhook any shard has seen (zero if none is retained).
func (d *Dispatcher) lastSuccess(ctx context.Context, webhookID string) (time.Time, error) {
	pipe := d.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, d.keys.shards)
	for s := range d.keys.shards {
		cmds[s] = pipe.HGet(ctx, d.keys.healthKey(s), webhookID+":ok")
	}
	_, _ = pipe.Exec(ctx) // read per command: a missing field is not an error
	var last int64
	for _, c := range cmds {
		ms, err := c.Int64()
		if err != nil && !isNil(err) {
			return time.Time{}, err
		}
		last = max(last, ms)
	}
	return msTime(last), nil
}

// disableIfBroken disables the webhook of a recorded outcome when the outcome says so (410 Gone) or
// when it has failed for Options.DisableAfter with no success, and runs the WebhookDisabled hook.
// The HSET that restarts a shard's run is a plain command, not a script: it is idempotent, and a lost
// one only delays the disable to the next failure; the disable itself is the registry's conditional
// save (a script).
func (d *Dispatcher) disableIfBroken(ctx context.Context, rec *record, o outcome, failingSince time.Time) {
	reason := ""
	switch {
	case o.disable:
		reason = "the endpoint answered 410 Gone"
	case d.opts.DisableAfter > 0 && !failingSince.IsZero() && d.now().Sub(failingSince) >= d.opts.DisableAfter:
		lastOK, err := d.lastSuccess(ctx, rec.WebhookID)
		if err != nil {
			d.log.Warn("webhooks: check webhook health", "webhook_id", rec.WebhookID, "error", err)
			return
		}
		if lastOK.Before(failingSince) {
			reason = fmt.Sprintf("every attempt failed for %s", d.opts.DisableAfter)
			break
		}
		// A success in another shard came after this shard's run of failures began: the run that
		// counts starts now. (Only this shard's start is known, so the clock restarts late, never early.)
		shard, _ := d.keys.shardOfDelivery(rec.ID)
		if err := d.rdb.HSet(ctx, d.keys.healthKey(shard), rec.WebhookID+":fail", d.now().UnixMilli()).Err(); err != nil {
			d.log.Warn("webhooks: reset webhook health", "webhook_id", rec.WebhookID, "error", err)
		}
	}
	if reason != "" {
		d.disableWebhook(ctx, rec.WebhookID, reason)
	}
}

// disableWebhook disables a webhook for a reason, logs it and runs the WebhookDisabled hook, once:
// a webhook already disabled is left as it is.
func (d *Dispatcher) disableWebhook(ctx context.Context, id, reason string) {
	changed, err := d.webhooks.disable(ctx, id)
	if err != nil {
		d.log.Error("webhooks: disable webhook", "webhook_id", id, "reason", reason, "error", err)
		return
	}
	if !changed {
		return
	}
	d.log.Warn("webhooks: webhook disabled", "webhook_id", id, "reason", reason)
	if f := d.opts.Hooks.WebhookDisabled; f != nil {
		d.runHook("WebhookDisabled", func() { f(id, reason) })
	}
}
