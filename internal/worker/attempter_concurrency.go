package worker

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// A webhook's MaxConcurrency: its slots live in Redis (rdb.TakeConcurrencySlot), shared by every
// replica. An attempt to a webhook with MaxConcurrency takes a slot before it starts and gives it back
// when its answer (or error) comes; a slot is held for a lease at most, so one a crashed replica held
// comes back when its lease ends. A webhook without MaxConcurrency costs nothing here.

// ConcurrencyRecheck is how soon a delivery whose webhook had no free slot is due again for the worker.
const ConcurrencyRecheck = 100 * time.Millisecond

// AtMaxConcurrency is the LastError of a delivery left for later because its webhook's slots were held.
const AtMaxConcurrency = "webhook at its MaxConcurrency: attempt left to the worker"

// TakeConcurrencySlot takes a slot of wh's MaxConcurrency for one attempt and returns its holder
// token; "" and true when wh has no MaxConcurrency. ok is false when every slot is held, or when Redis
// could not say (the attempt waits rather than risk going over).
func (a *Attempter) TakeConcurrencySlot(ctx context.Context, wh *rdb.WebhookRecord) (token string, ok bool) {
	if wh == nil || wh.MaxConcurrency <= 0 {
		return "", true
	}
	token = rdb.NewToken()
	ok, err := rdb.TakeConcurrencySlot(ctx, a.cfg.Redis, a.cfg.Keys, wh.ID, wh.MaxConcurrency, a.cfg.Lease, token)
	if err != nil {
		a.cfg.Log.Warn("webhooks: take a MaxConcurrency slot", "webhook_id", wh.ID, "error", err)
		return "", false
	}
	return token, ok
}

// ReleaseConcurrencySlot gives back the slot token holds of webhookID's MaxConcurrency (none for "").
func (a *Attempter) ReleaseConcurrencySlot(ctx context.Context, webhookID, token string) {
	if token == "" {
		return
	}
	if err := rdb.ReleaseConcurrencySlot(context.WithoutCancel(ctx), a.cfg.Redis, a.cfg.Keys, webhookID, token); err != nil {
		// The slot comes back when its lease ends.
		a.cfg.Log.Warn("webhooks: give back a MaxConcurrency slot", "webhook_id", webhookID, "error", err)
	}
}

// WaitForSlot is the outcome of a leased delivery not attempted because its webhook's MaxConcurrency
// slots were all held: back to its queue, due again soon, its retry budget kept.
func WaitForSlot(rec *rdb.Record, next time.Time) Outcome {
	o := HandBack(rec, next)
	o.Err = AtMaxConcurrency
	return o
}
