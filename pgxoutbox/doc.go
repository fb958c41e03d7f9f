// Package pgxoutbox is the transactional outbox of github.com/smartdrop/webhooks, on PostgreSQL with
// pgx v5: an event enqueued in the caller's transaction (EnqueueTx, or EnqueueSQLTx on database/sql)
// is delivered if and only if that transaction commits, once per subscribed (webhook, event) pair.
// It is a module of its own, so the core library depends on no database driver.
//
// Usage:
//
//	err = pgxoutbox.Migrate(ctx, pool, "")            // or run schema.sql with your own tool
//	ob, err := pgxoutbox.New(pool, d, pgxoutbox.Options{})
//	go ob.Run(ctx)                                     // the relay, on every replica
//
//	tx, err := pool.Begin(ctx)
//	// ... the caller's own writes ...
//	err = ob.EnqueueTx(ctx, tx, webhooks.Event{Type: "order.paid", ID: "evt_1", Data: order})
//	err = tx.Commit(ctx)                               // delivered if and only if this commits
//
// # How it works
//
// EnqueueTx validates the event as Dispatcher.Enqueue does (Dispatcher.ValidateEvent, same errors)
// and inserts one row in the caller's transaction, in one statement: the event's type, id, tenant,
// order key, time (to the nanosecond) and data as encoding/json encoded it, which the relay hands
// back to Enqueue as a json.RawMessage, so the delivered body is byte for byte a direct Enqueue's.
//
// Run, on every replica and with no leader, moves committed rows to Redis: a pass, in one
// transaction, claims up to BatchSize rows (FOR UPDATE SKIP LOCKED), calls Enqueue for each, deletes
// those it accepted and commits. Why row locks held for the pass rather than a lease column: a relay
// that dies releases its rows the moment PostgreSQL sees its connection drop (and one that hangs,
// after RelayTimeout, by idle_in_transaction_session_timeout), where a lease would hold them until
// it expired; and a row costs one write (its deletion), where a lease costs two. The price is a
// connection and a transaction open per pass while Enqueue talks to Redis (milliseconds). A crash at
// any point leaves the pass's rows to the next pass, which enqueues them again: the claim in Redis
// makes a pair already accepted a duplicate that sends nothing, so each pair is still delivered once.
//
// A pass that relayed rows is followed by another at once; an idle relay waits for a NOTIFY or
// PollInterval. EnqueueTx adds the NOTIFY to one transaction per NotifyInterval only: PostgreSQL
// commits notifying transactions one at a time (measured here: 587 commits/s with one in each, 4,982
// without). Passes back off (100ms doubling to MaxBackoff) while PostgreSQL or Redis fail them.
//
// # Order
//
// The events of one (tenant, order key) are enqueued, and so delivered (Event.OrderKey), in the order
// of their transactions' commits, by any number of relays, across crashes:
//   - EnqueueTx of an ordered event takes a transaction lock on its key (pg_advisory_xact_lock) before
//     the row's id is drawn, so a second transaction enqueueing the same key waits in EnqueueTx until
//     the first ends, and a key's ids follow its commit order. Two transactions that enqueue two keys
//     in opposite orders can deadlock (PostgreSQL aborts one); take keys in a fixed order.
//   - A pass claims an ordered row only with its key's relay lock (pg_try_advisory_xact_lock), so one
//     pass at a time holds a key; it enqueues a key's rows one at a time in id order, each after the
//     one before was accepted, and stops the key at a failure. It relays none of a key's rows while an
//     older row of the key is pending that it did not claim (the lock is tried row by row, so a scan
//     can get a key only at its later rows, after another pass released it).
//   - A row held with its error (below) does not stop its key, as a delivery that fails for good does
//     not by default (webhooks.Options.BlockKeyOnFailure). Releasing it (clearing held_at) relays it
//     after the key's later events.
//
// Unordered events, and different keys, are relayed in parallel, roughly oldest first.
//
// # Held rows
//
// A row whose event Enqueue refuses for good when the relay gets to it (webhooks.ErrInvalidEvent:
// MaxPayloadBytes lowered, an operational type reserved since, its id enqueued before with other data;
// webhooks.ErrOrderKeyConflict; data failing its type's schema, or whose validation would take more
// than the schema's bound of work) is held: kept with last_error (at most MaxLastErrorBytes, quoting
// a bounded part of the data: the core's docs/security.md; the log line of the hold quotes none of it)
// and held_at, counted by Stats.Held, never tried again. Inspect them with SQL (SELECT id, event_id, last_error FROM webhooks_outbox WHERE
// held_at IS NOT NULL); delete them, or clear held_at to relay them again. A row Enqueue fails for
// another cause (Redis down, a timeout) stays pending with last_error and failures (Stats.Failing)
// and is retried.
//
// # Schema
//
// Migrate creates the table (schema.sql, embedded; Schema returns it for another table name) with
// four indexes: the primary key (deletes by id), the pending rows by id (each pass's scan, partial so
// held rows cost nothing), the pending ordered rows by (key lock, id) (the check that no older row of
// a key is pending, partial so unordered rows cost nothing) and the held rows (Stats, operators).
// The relay deletes rows at the low end of the pending index, whose dead entries stay until VACUUM;
// passes read from the oldest pending id a full scan found, once a second, not across them.
package pgxoutbox
