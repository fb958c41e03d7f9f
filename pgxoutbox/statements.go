package pgxoutbox

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// statements are the SQL texts of one outbox table. The table name is checked by Options
// ([a-z_][a-z0-9_]*, so it holds no quote) and written into the text quoted (quoteIdent), so that a
// reserved word such as order names a table too; every value is a parameter.
type statements struct {
	// insert writes one unordered row; insertOrdered takes the key's lock first (keyLock); the
	// Notify variants add a pg_notify on the table's channel in the same statement.
	insert, insertNotify, insertOrdered, insertOrderedNotify string
	claim, oldest, remove, fail, stats, listen               string
}

// rowColumns are the columns EnqueueTx writes, in row.args order.
const rowColumns = "tenant, order_key, key_lock, event_id, event_type, data, occurred_at, occurred_ns"

// claimWindow is how far beyond the oldest pending row's id a pass looks, in BatchSize: the rows of
// the keys another pass holds and the rows other passes locked are skipped within it, so a pass reads
// at most claimWindow × BatchSize index entries (ids are unique), however long the backlog and
// however it is spread. A pass that holds the oldest row (its Enqueue calls slow) keeps the others
// within the window until it commits (RelayTimeout at most).
const claimWindow = 16

// quoteIdent is table as a quoted SQL identifier. A name Options takes is lowercase, so quoting
// names the same table as the bare name would (where the bare name is not a reserved word).
func quoteIdent(table string) string { return `"` + table + `"` }

func newStatements(name string) statements {
	table := quoteIdent(name)
	values := "($1::text, $2::text, $3::bigint, $4::text, $5::text, $6::bytea, $7::timestamptz, $8::smallint)"
	insert := "INSERT INTO " + table + " (" + rowColumns + ") VALUES " + values
	// The key's lock is taken in a subquery the insert reads from (OFFSET 0 keeps it one), so it is
	// held before the row's id is drawn: a key's ids follow the commit order of its transactions.
	insertOrdered := "INSERT INTO " + table + " (" + rowColumns + ") SELECT " + strings.Trim(values, "()") +
		" FROM (SELECT pg_advisory_xact_lock($3::bigint) OFFSET 0) AS key_lock"
	notify := func(ins string) string {
		return "WITH ins AS (" + ins + " RETURNING 1) SELECT pg_notify('" + name + "', '') FROM ins"
	}
	return statements{
		insert:              insert,
		insertNotify:        notify(insert),
		insertOrdered:       insertOrdered,
		insertOrderedNotify: notify(insertOrdered),
		// claimed: the oldest pending rows from the floor ($4, see floor), within the window, that
		// no other pass holds: an unordered
		// row as it comes, an ordered one only when this pass gets (or has) its key's relay lock, so
		// that one pass at a time holds a key and takes its rows in id order. The lock is tried on
		// the rows the scan reaches (the pending index, in id order, stops at LIMIT; passSettings),
		// before SKIP LOCKED looks at the row.
		//
		// behind: the lock is tried row by row, so one scan may fail to get a key at its first rows
		// (another pass held it) and get it at later ones (that pass has just committed); and a row
		// that pass left pending (it failed, or it stopped first) is then behind the ones this pass
		// got. So an ordered row is relayed only when no pending row of its key is older than the
		// oldest this pass got of it: behind is true for all of a key's rows otherwise, and the
		// pass leaves them. The check reads the statement's snapshot, in which the rows a pass
		// committed the deletion of since it began still count: it may leave a key for a later pass,
		// never relay one out of order. The rows come in no particular order: the pass sorts them.
		claim: "WITH claimed AS (SELECT id, tenant, order_key, key_lock, event_id, event_type, data, occurred_at, occurred_ns, failures" +
			" FROM " + table +
			" WHERE held_at IS NULL AND id >= $4" +
			" AND id <= (SELECT min(id) FROM " + table + " WHERE held_at IS NULL AND id >= $4) + $1" +
			" AND (key_lock = 0 OR pg_try_advisory_xact_lock(key_lock # $3::bigint))" +
			" ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)" +
			" SELECT c.id, c.tenant, c.order_key, c.event_id, c.event_type, c.data, c.occurred_at, c.occurred_ns, c.failures," +
			" c.key_lock <> 0 AND EXISTS (SELECT 1 FROM " + table + " AS p WHERE p.key_lock = c.key_lock AND p.key_lock <> 0" +
			" AND p.held_at IS NULL AND p.id < (SELECT min(o.id) FROM claimed AS o WHERE o.key_lock = c.key_lock)) AS behind" +
			" FROM claimed AS c",
		// oldest is the oldest pending row's id (floor), NULL when none is.
		oldest: "SELECT min(id) FROM " + table + " WHERE held_at IS NULL",
		remove: "DELETE FROM " + table + " WHERE id = ANY($1::bigint[])",
		// fail records each failed row's error; hold also keeps it out of the relay for good.
		fail: "UPDATE " + table + " AS t SET failures = t.failures + 1, last_error = f.err," +
			" held_at = CASE WHEN f.hold THEN clock_timestamp() END" +
			" FROM unnest($1::bigint[], $2::text[], $3::bool[]) AS f(id, err, hold) WHERE t.id = f.id",
		stats: "SELECT count(*) FILTER (WHERE held_at IS NULL)," +
			" count(*) FILTER (WHERE held_at IS NULL AND failures > 0)," +
			" count(*) FILTER (WHERE held_at IS NOT NULL)," +
			" coalesce(extract(epoch FROM clock_timestamp() - min(created_at) FILTER (WHERE held_at IS NULL)), 0)::float8" +
			" FROM " + table,
		listen: "LISTEN " + table,
	}
}

// sqlError wraps a PostgreSQL error of a call (what) with ErrNotMigrated when the table or a column
// is missing.
func sqlError(what string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "42703") { // undefined_table, undefined_column
		return fmt.Errorf("pgxoutbox: %s: %w: %w", what, ErrNotMigrated, err)
	}
	return fmt.Errorf("pgxoutbox: %s: %w", what, err)
}
