package webhooks

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/worker"
)

// A webhook's MaxConcurrency: its slots live in Redis (rdb.TakeConcurrency), shared by every replica.
// An attempt to a webhook with MaxConcurrency takes a slot before it starts and gives it back when its
// answer (or error) comes; a slot is held for a lease at most, so one a crashed replica held comes
// back when its lease ends. A webhook without MaxConcurrency costs nothing here.

// concurrencyRecheck is how soon a delivery whose webhook had no free slot is due again for the worker.
const concurrencyRecheck = 100 * time.Millisecond

// atMaxConcurrency is the LastError of a delivery left for later because its webhook's slots were held.
const atMaxConcurrency = "webhook at its MaxConcurrency: attempt left to the worker"

// takeConcurrencySlot takes a slot of wh's MaxConcurrency for one attempt and returns its holder
// token; "" and true when wh has no MaxConcurrency. ok is false when every slot is held, or when Redis
// could not say (the attempt waits rather than risk going over).
func (d *Dispatcher) takeConcurrencySlot(ctx context.Context, wh *storedWebhook) (token string, ok bool) {
	if wh == nil || wh.MaxConcurrency <= 0 {
		return "", true
	}
	token = rdb.NewToken()
	n, err := rdb.TakeConcurrency.Run(ctx, d.rdb, []string{d.keys.Concurrency(wh.ID)}, wh.MaxConcurrency,
		max(d.lease.Milliseconds(), 1), token).Int()
	if err != nil {
		d.log.Warn("webhooks: take a MaxConcurrency slot", "webhook_id", wh.ID, "error", err)
		return "", false
	}
	return token, n == 1
}

// releaseConcurrencySlot gives back the slot token holds of webhookID's MaxConcurrency (none for "").
func (d *Dispatcher) releaseConcurrencySlot(ctx context.Context, webhookID, token string) {
	if token == "" {
		return
	}
	if err := d.rdb.ZRem(context.WithoutCancel(ctx), d.keys.Concurrency(webhookID), token).Err(); err != nil {
		// The slot comes back when its lease ends.
		d.log.Warn("webhooks: give back a MaxConcurrency slot", "webhook_id", webhookID, "error", err)
	}
}

// waitForSlot is the outcome of a leased delivery not attempted because its webhook's MaxConcurrency
// slots were all held: back to its queue, due again soon, its retry budget kept.
func waitForSlot(rec *rdb.Record, next time.Time) worker.Outcome {
	o := worker.HandBack(rec, next)
	o.Err = atMaxConcurrency
	return o
}
