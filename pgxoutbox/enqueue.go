package pgxoutbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/smartdrop/webhooks/internal/types"

	"github.com/jackc/pgx/v5"
	"github.com/smartdrop/webhooks"
)

// EnqueueTx writes evt into tx: the event is delivered if and only if tx commits, once per subscribed
// (webhook, event) pair, by the relay (Run) of any replica, in a Dispatcher.Enqueue of its own.
// Enqueueing the same event id in several transactions delivers it once (the claim dedups), as
// dispatching it several times would.
//
// It first validates evt as Enqueue does, with the same errors (wrapping webhooks.ErrInvalidEvent),
// and then writes nothing: a bad type or id, an operational type, data that encoding/json cannot
// encode, a body over MaxPayloadBytes, data that fails its type's schema in the catalog of event types
// (Dispatcher.EventTypes; read from the Dispatcher's cache, at most once per second, and not needed:
// while Redis is down the catalog last read is used, or none, and the relay's Enqueue checks again). A zero evt.Time is set to now, so the event keeps the time it
// was written. Then it inserts one row, in one statement; nothing else. Its error is the
// statement's otherwise (the transaction is then aborted, as after any failed statement), wrapping
// ErrNotMigrated when the table is missing.
//
// An ordered event (OrderKey set) first takes its key's transaction lock: transactions that enqueue
// events of one (tenant, key) commit one after another, the later waiting in EnqueueTx for the
// earlier to end, so the key's events are relayed, and delivered, in commit order. A transaction that
// enqueues events of two keys should take them in a fixed order (by key), as with row locks:
// PostgreSQL ends a deadlock by aborting one of the transactions.
//
// At most one transaction per Options.NotifyInterval also notifies the relays, which wake when it
// commits.
func (o *Outbox) EnqueueTx(ctx context.Context, tx pgx.Tx, evt webhooks.Event) error {
	if tx == nil {
		return fmt.Errorf("pgxoutbox: EnqueueTx: nil transaction")
	}
	return o.enqueue(ctx, evt, func(query string, args []any) error {
		_, err := tx.Exec(ctx, query, args...)
		return err
	})
}

// EnqueueSQLTx is EnqueueTx on a database/sql transaction of the pgx driver (github.com/jackc/pgx/v5/stdlib),
// or of any driver for PostgreSQL that takes the same parameters.
func (o *Outbox) EnqueueSQLTx(ctx context.Context, tx *sql.Tx, evt webhooks.Event) error {
	if tx == nil {
		return fmt.Errorf("pgxoutbox: EnqueueSQLTx: nil transaction")
	}
	return o.enqueue(ctx, evt, func(query string, args []any) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	})
}

// enqueue validates evt and writes its row with exec, the caller's transaction's.
func (o *Outbox) enqueue(ctx context.Context, evt webhooks.Event, exec func(query string, args []any) error) error {
	query, args, err := o.insert(ctx, evt)
	if err != nil {
		return err
	}
	if err := exec(query, args); err != nil {
		return sqlError("enqueue event "+evt.ID, err)
	}
	return nil
}

// insert validates evt as Enqueue would and returns the statement that writes its row.
func (o *Outbox) insert(ctx context.Context, evt webhooks.Event) (string, []any, error) {
	if evt.Time.IsZero() {
		evt.Time = o.now()
	}
	value, err := types.EventData(evt.Data)
	if err != nil {
		if verr := o.d.ValidateEvent(ctx, evt); verr != nil {
			return "", nil, verr // Enqueue's own error, which checks the rest first
		}
		return "", nil, err
	}
	data, err := json.Marshal(value)
	if err != nil {
		if verr := o.d.ValidateEvent(ctx, evt); verr != nil {
			return "", nil, verr // Enqueue's own error, which checks the rest first
		}
		return "", nil, fmt.Errorf("%w: encode data: %w", webhooks.ErrInvalidEvent, err)
	}
	// encoding/json writes a RawMessage as it is, so this encodes as evt would, to the same size.
	evt.Data = json.RawMessage(data)
	if err := o.d.ValidateEvent(ctx, evt); err != nil {
		return "", nil, err
	}
	r := newRow(o.opts.Table, evt, data)
	notify := o.notifyNow()
	var query string
	switch {
	case evt.OrderKey != "" && notify:
		query = o.sql.insertOrderedNotify
	case evt.OrderKey != "":
		query = o.sql.insertOrdered
	case notify:
		query = o.sql.insertNotify
	default:
		query = o.sql.insert
	}
	return query, r.args(), nil
}

// notifyNow reports whether this insert carries the NOTIFY: the first since NotifyInterval.
func (o *Outbox) notifyNow() bool {
	if o.opts.NotifyInterval < 0 {
		return false
	}
	now := o.now().UnixNano()
	last := o.lastNotify.Load()
	return now-last >= int64(o.opts.NotifyInterval) && o.lastNotify.CompareAndSwap(last, now)
}
