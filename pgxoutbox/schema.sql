-- The outbox table of github.com/smartdrop/webhooks/pgxoutbox (Migrate runs this file; run it with
-- your own migration tool instead if you prefer). For another Options.Table, replace the default
-- table name in every quoted identifier below (the table's and its indexes') with that name; quoted,
-- so that a reserved word such as order may name the table. Each statement is idempotent.
--
-- One row is one event that a committed transaction enqueued (EnqueueTx) and that no relay has moved
-- to Redis yet; the relay deletes it once Dispatcher.Enqueue accepted it. The row holds what Enqueue
-- needs to rebuild the event exactly: the delivered body is the one a direct Enqueue would send.
CREATE TABLE IF NOT EXISTS "webhooks_outbox" (
    -- Assigned at insert: the relay's order, and within one order key the commit order (EnqueueTx of
    -- an ordered event takes its key's lock first, so a key's transactions commit one at a time).
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant      text        NOT NULL,                 -- Event.Tenant ('' for none)
    order_key   text        NOT NULL,                 -- Event.OrderKey ('' for unordered)
    key_lock    bigint      NOT NULL,                 -- the order key's lock id (0 when unordered)
    event_id    text        NOT NULL,                 -- Event.ID
    event_type  text        NOT NULL,                 -- Event.Type
    data        bytea       NOT NULL,                 -- Event.Data as encoding/json encoded it (JSON)
    occurred_at timestamptz NOT NULL,                 -- Event.Time (EnqueueTx's time when zero), to the microsecond
    occurred_ns smallint    NOT NULL DEFAULT 0,       -- Event.Time's nanoseconds below the microsecond
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(), -- when it was written (Stats' ages)
    failures    integer     NOT NULL DEFAULT 0,       -- relay attempts that failed
    last_error  text,                                 -- the last failure's error
    held_at     timestamptz                           -- set: kept with last_error, never relayed again
);

-- The relay's scan: the rows not held, oldest first. Partial, so rows held by the thousands (a schema
-- changed under a backlog) cost the relay nothing, and each pass reads the index from its head
-- without visiting them.
CREATE INDEX IF NOT EXISTS "webhooks_outbox_pending" ON "webhooks_outbox" (id) WHERE held_at IS NULL;

-- Per order key, its pending rows in id order: the relay checks that no row of a key is older than
-- the oldest it claimed of it. Partial: unordered rows (key_lock 0) are not in it and cost it
-- nothing.
CREATE INDEX IF NOT EXISTS "webhooks_outbox_keys" ON "webhooks_outbox" (key_lock, id) WHERE key_lock <> 0 AND held_at IS NULL;

-- The held rows, for Stats and for an operator listing them; empty (and free to maintain) while none
-- is held.
CREATE INDEX IF NOT EXISTS "webhooks_outbox_held" ON "webhooks_outbox" (id) WHERE held_at IS NOT NULL;
