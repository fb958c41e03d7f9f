package pgxoutbox

import (
	"context"
	_ "embed" // schema.sql
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// schemaSQL is schema.sql: the one copy of the schema, for Migrate and for users' own tools.
//
//go:embed schema.sql
var schemaSQL string

// Execer runs SQL: a *pgxpool.Pool, a *pgx.Conn or a pgx.Tx.
type Execer interface {
	Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error)
}

// Schema returns the SQL that creates the outbox table named table ("" for DefaultTable) and its
// indexes: schema.sql (in this module) with its name replaced in every quoted identifier. Every
// statement is idempotent.
func Schema(table string) (string, error) {
	opts, err := Options{Table: table}.withDefaults()
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(schemaSQL, `"`+DefaultTable, `"`+opts.Table), nil
}

// migrateLock is the id of the transaction lock under which Migrate creates table.
func migrateLock(table string) int64 {
	h := fnv.New64a()
	h.Write([]byte("pgxoutbox migrate " + table))
	return int64(h.Sum64())
}

// Migrate creates the outbox table named table ("" for DefaultTable) and its indexes if they do not
// exist, in one transaction (db's own when db is a pgx.Tx) under a transaction lock of its own, so
// that replicas starting at once may all call it. It runs Schema(table); a migration tool may run
// schema.sql instead.
//
// Indexes: the primary key (id), by which the relay deletes and updates the rows it relayed; a
// partial index on id of the rows not held, which each relay pass reads from its head in id order
// (held rows, however many, are not in it); a partial index on id of the held rows, for Stats and
// operators, empty while none is.
func Migrate(ctx context.Context, db Execer, table string) error {
	schema, err := Schema(table)
	if err != nil {
		return err
	}
	if table == "" {
		table = DefaultTable
	}
	// No arguments: one simple-protocol query, whose statements run as one transaction.
	lock := fmt.Sprintf("SELECT pg_advisory_xact_lock(%d);\n", migrateLock(table))
	if _, err := db.Exec(ctx, lock+schema); err != nil {
		return fmt.Errorf("pgxoutbox: migrate: %w", err)
	}
	return nil
}
