package pgxoutbox

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Run is the relay: every replica runs it, with no leader, and each committed row is moved to Redis
// by one of them. It keeps Options.Concurrency passes going, each of which, in one transaction,
// claims up to BatchSize of the oldest committed rows that no other pass holds (FOR UPDATE SKIP
// LOCKED; an ordered row only with its key, see below), calls Dispatcher.Enqueue for each
// (EnqueueConcurrency at once), deletes the rows Enqueue accepted, records the error of those it did
// not, and commits. A process that dies anywhere in a pass leaves its transaction to be rolled back
// by PostgreSQL when its connection drops, and its rows to the next pass; those Enqueue accepted
// already come back as duplicates, which send nothing: each pair is still delivered once.
//
// A pass that relayed rows is followed at once by another; one that found none waits for a NOTIFY
// (see Options.NotifyInterval) or PollInterval. A pass that PostgreSQL or Redis failed is followed by
// a wait of 100ms, doubling up to MaxBackoff; an Enqueue that fails for such a cause (the error wraps
// webhooks.ErrNotAccepted) leaves its row pending, with its error and failure count, and the pass
// starts no more. A row whose event Enqueue refuses for good (webhooks.ErrInvalidEvent: the event no
// longer validates, say MaxPayloadBytes was lowered, or its id names another event; or
// webhooks.ErrOrderKeyConflict) is held: kept with its error and held_at, counted by Stats, never
// relayed again unless an operator clears held_at.
//
// Order: a pass claims an ordered row only with its (tenant, order key)'s relay lock, which it holds
// until it commits, and then takes the key's rows in id order and enqueues them one at a time, each
// after the one before was accepted (or held); a failure stops the key's rows for the pass, and a key
// with an older pending row the pass did not claim is left to a later pass. So a key's events are
// enqueued in id order, which is their commit order (EnqueueTx), across any number of relays and
// crashes; a held row does not stop its key (as a failed delivery does not, by default:
// webhooks.Options.BlockKeyOnFailure).
//
// Run returns nil when ctx ends, once its passes have ended (a pass that has enqueued rows commits
// their deletion first, within 5s); and an error wrapping ErrNotMigrated, at once, when the table is
// missing or outdated.
func (o *Outbox) Run(ctx context.Context) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	w, fl := newWaker(), &floor{}
	var wg sync.WaitGroup
	wg.Go(func() { o.listen(ctx, w) })
	for range o.opts.Concurrency {
		wg.Go(func() {
			if err := o.relay(ctx, w, fl); err != nil {
				stop(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); errors.Is(err, ErrNotMigrated) {
		return err
	}
	return nil
}

// relay runs passes until ctx ends: at once after a pass that relayed rows; after a wake or
// PollInterval after one that found none (or only rows behind another pass's); after a backoff
// after one that failed. It returns only a missing table's error (ErrNotMigrated), or nil when ctx
// ends.
func (o *Outbox) relay(ctx context.Context, w *waker, fl *floor) error {
	bo := backoff{max: o.opts.MaxBackoff}
	for ctx.Err() == nil {
		wake := w.wait()
		res, err := o.pass(ctx, fl)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrNotMigrated) {
			o.opts.Logger.Error("pgxoutbox: relay stopped", "table", o.opts.Table, "error", err)
			return err
		}
		if err != nil || res.failed > 0 {
			wait := bo.next()
			o.opts.Logger.Warn("pgxoutbox: relay pass failed; backing off", "table", o.opts.Table,
				"error", err, "rows_failed", res.failed, "retry_in", wait)
			sleep(ctx, wait)
			continue
		}
		bo.reset()
		if res.claimed > res.behind {
			continue // more may be waiting; a pass that could relay none of its rows waits
		}
		t := time.NewTimer(o.opts.PollInterval)
		select {
		case <-ctx.Done():
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
	return nil
}
