package pgxoutbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/internal/types"
)

// settleTimeout bounds a pass's last round trip (its deletions, failures and commit), which it makes
// even when Run's context has ended, so that what Enqueue accepted is not relayed again.
const settleTimeout = 5 * time.Second

// idleSlack is what the pass's idle_in_transaction_session_timeout adds to RelayTimeout.
const idleSlack = 5 * time.Second

// passResult counts what one pass did with the rows it claimed.
type passResult struct {
	claimed, behind, accepted, duplicates, held, failed int
}

// outcome is what became of one claimed row.
type outcome int

const (
	notTried outcome = iota // left for another pass (the pass stopped first)
	accepted                // Enqueue accepted it: delete the row
	held                    // Enqueue refused it for good: keep it with its error
	failed                  // Enqueue failed (Redis, a timeout): keep it pending with its error
)

// relayed is one claimed row's outcome, its error and its duplicates.
type relayed struct {
	outcome    outcome
	err        error
	duplicates int
}

// pass claims a batch, enqueues it and settles it, in one transaction on one connection of the pool.
// A connection left in a transaction by an error is closed on release, which rolls it back.
func (o *Outbox) pass(ctx context.Context, fl *floor) (passResult, error) {
	conn, err := o.pool.Acquire(ctx)
	if err != nil {
		return passResult{}, sqlError("acquire a connection", err)
	}
	defer conn.Release()
	rows, err := o.claim(ctx, conn, fl)
	if err != nil {
		return passResult{}, err
	}
	if len(rows) == 0 {
		if _, err := conn.Exec(ctx, "commit"); err != nil {
			return passResult{}, sqlError("commit", err)
		}
		return passResult{}, nil
	}
	outs := o.enqueueRows(ctx, rows)
	res := passResult{claimed: len(rows)}
	for _, r := range outs {
		switch r.outcome {
		case accepted:
			res.accepted++
			res.duplicates += r.duplicates
		case held:
			res.held++
		case failed:
			res.failed++
		}
	}
	for _, r := range rows {
		if r.behind {
			res.behind++
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	if err := o.settle(sctx, conn, rows, outs); err != nil {
		return res, err
	}
	o.opts.Logger.Debug("pgxoutbox: pass", "table", o.opts.Table, "claimed", res.claimed, "behind", res.behind, "accepted", res.accepted,
		"duplicates", res.duplicates, "held", res.held, "failed", res.failed)
	return res, nil
}

// passSettings are the settings of a pass's transaction ($1: idle_in_transaction_session_timeout in
// ms). The planner is kept to the pending index in id order (no sequential scan, no sort, no bitmap):
// the claim's relay-lock filter must run only on the rows the scan reaches before LIMIT, as it does
// on that index; on a small table the planner would otherwise read and sort it all, and lock every
// order key in it. A plan made in a pass's transaction is made under these settings, so a statement
// cached by the connection keeps that plan. JIT is off: the settings add a large cost to any plan
// they discourage, which would otherwise make PostgreSQL compile the claim (300ms here) at each pass.
const passSettings = "select set_config('idle_in_transaction_session_timeout', $1, true)," +
	" set_config('enable_seqscan', 'off', true), set_config('enable_sort', 'off', true)," +
	" set_config('enable_bitmapscan', 'off', true), set_config('jit', 'off', true)"

// claim begins the pass's transaction and claims its rows, in one round trip; a full scan (see
// floor) first reads the oldest pending id, and sets the floor to it.
func (o *Outbox) claim(ctx context.Context, conn *pgxpool.Conn, fl *floor) ([]row, error) {
	idle := strconv.FormatInt((o.opts.RelayTimeout + idleSlack).Milliseconds(), 10)
	from, full := fl.next(time.Now())
	b := &pgx.Batch{}
	b.Queue("begin")
	b.Queue(passSettings, idle)
	if full {
		b.Queue(o.sql.oldest)
	}
	b.Queue(o.sql.claim, claimWindow*o.opts.BatchSize, o.opts.BatchSize, relayLockSalt, from)
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return nil, sqlError("begin", err)
		}
	}
	if full {
		var oldest *int64
		if err := br.QueryRow().Scan(&oldest); err != nil {
			return nil, sqlError("claim", err)
		}
		fl.set(oldest)
	}
	rs, err := br.Query()
	if err != nil {
		return nil, sqlError("claim", err)
	}
	var out []row
	var r row
	_, err = pgx.ForEachRow(rs, []any{&r.id, &r.tenant, &r.orderKey, &r.eventID, &r.eventType, &r.data,
		&r.occurredAt, &r.occurredNs, &r.failures, &r.behind}, func() error {
		out = append(out, r)
		r.data = nil // the next row scans into a buffer of its own
		return nil
	})
	if err != nil {
		return nil, sqlError("claim", err)
	}
	if err := br.Close(); err != nil {
		return nil, sqlError("claim", err)
	}
	slices.SortFunc(out, func(a, b row) int { return cmp.Compare(a.id, b.id) })
	return out, nil
}

// enqueueRows enqueues the claimed rows: the rows of one order key one at a time in id order (the
// order claim returned them in), each after the one before was accepted or held; other rows and keys
// EnqueueConcurrency at once. It leaves the rows behind an older row of their key (row.behind), and
// after the first failure it starts no more. It ends within RelayTimeout.
func (o *Outbox) enqueueRows(ctx context.Context, rows []row) []relayed {
	outs := make([]relayed, len(rows))
	// groups: each unordered row alone, each key's rows together, in the order of their first row.
	var groups [][]int
	byKey := map[[2]string]int{}
	for i, r := range rows {
		if r.behind {
			continue
		}
		if r.orderKey == "" {
			groups = append(groups, []int{i})
			continue
		}
		k := [2]string{r.tenant, r.orderKey}
		g, ok := byKey[k]
		if !ok {
			g = len(groups)
			byKey[k] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	ectx, cancel := context.WithTimeout(ctx, o.opts.RelayTimeout)
	defer cancel()
	var stopped atomic.Bool
	slots := make(chan struct{}, o.opts.EnqueueConcurrency)
	var wg sync.WaitGroup
	for _, g := range groups {
		select {
		case slots <- struct{}{}:
		case <-ectx.Done():
		}
		if ectx.Err() != nil || stopped.Load() {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			for _, i := range g {
				if stopped.Load() || ectx.Err() != nil {
					return
				}
				outs[i] = o.enqueueRow(ctx, ectx, rows[i])
				if outs[i].outcome == failed || outs[i].outcome == notTried {
					stopped.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	return outs
}

// enqueueRow enqueues one row's event, within ectx (RelayTimeout); runCtx is Run's context, whose end
// leaves the row untried rather than failed.
func (o *Outbox) enqueueRow(runCtx, ectx context.Context, r row) relayed {
	evt, err := r.event()
	if err != nil {
		return o.hold(r, fmt.Errorf("%w: row %d: %w", webhooks.ErrInvalidEvent, r.id, err))
	}
	results, err := o.d.Enqueue(ectx, evt)
	switch {
	case err == nil:
		dups := 0
		for _, res := range results {
			if res.Duplicate {
				dups++
			}
		}
		return relayed{outcome: accepted, duplicates: dups}
	case errors.Is(err, webhooks.ErrInvalidEvent) || errors.Is(err, webhooks.ErrOrderKeyConflict):
		return o.hold(r, err)
	case runCtx.Err() != nil:
		return relayed{outcome: notTried}
	default:
		return relayed{outcome: failed, err: err}
	}
}

// hold is the outcome of a row Enqueue refused for good, logged. The error of an invalid event may
// quote its data (a schema's failure quotes a bounded part of the failing value): the log line
// does not carry it, and points at the row's last_error, which is kept with the data in the table.
func (o *Outbox) hold(r row, err error) relayed {
	reason := err.Error()
	if errors.Is(err, webhooks.ErrInvalidEvent) {
		reason = "webhooks.ErrInvalidEvent: the event is invalid; its error, which may quote its data, is in the row's last_error"
	}
	o.opts.Logger.Error("pgxoutbox: row held: its event cannot be enqueued", "table", o.opts.Table, "row", r.id,
		"event_id", r.eventID, "tenant", r.tenant, "error", reason)
	return relayed{outcome: held, err: err}
}

// settle deletes the accepted rows, records the errors of the held and failed ones, and commits, in
// one round trip.
func (o *Outbox) settle(ctx context.Context, conn *pgxpool.Conn, rows []row, outs []relayed) error {
	var done, failIDs []int64
	var errs []string
	var holds []bool
	for i, r := range outs {
		switch r.outcome {
		case accepted:
			done = append(done, rows[i].id)
		case held, failed:
			failIDs = append(failIDs, rows[i].id)
			errs = append(errs, lastError(r.err))
			holds = append(holds, r.outcome == held)
		}
	}
	b := &pgx.Batch{}
	if len(done) > 0 {
		b.Queue(o.sql.remove, done)
	}
	if len(failIDs) > 0 {
		b.Queue(o.sql.fail, failIDs, errs, holds)
	}
	b.Queue("commit")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return sqlError("settle", err)
	}
	return nil
}

// lastError is err as a row's last_error: at most MaxLastErrorBytes, cut on a character boundary.
func lastError(err error) string { return types.Clip(err.Error(), MaxLastErrorBytes) }
