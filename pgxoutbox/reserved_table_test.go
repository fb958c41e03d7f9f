package pgxoutbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/pgxoutbox"
)

// TestReservedWordTable: an Options.Table that is an SQL reserved word ("order", "user") works end to
// end: Migrate creates it and its indexes, EnqueueTx writes to it, the relay delivers its events and
// empties it, Stats reads it, and the NOTIFY channel wakes the relay (PollInterval is long). Each
// runs in a PostgreSQL schema of its own, found through the pool's search_path (issue 43). Broken by
// writing the table's name into the SQL unquoted (Migrate: syntax error at or near "order").
func TestReservedWordTable(t *testing.T) {
	url := pgURL(t)
	admin := newPool(t, url, 2)
	ctx := context.Background()
	for _, table := range []string{"order", "user"} {
		t.Run(table, func(t *testing.T) {
			schema := "wht_" + testName(t)
			_, err := admin.Exec(ctx, "CREATE SCHEMA "+schema)
			require.NoError(t, err)
			t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
			cfg, err := pgxpool.ParseConfig(url)
			require.NoError(t, err)
			cfg.MaxConns = 8
			cfg.ConnConfig.RuntimeParams["search_path"] = schema
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			require.NoError(t, err)
			t.Cleanup(pool.Close)

			require.NoError(t, pgxoutbox.Migrate(ctx, pool, table), "Migrate a table named %q", table)
			require.NoError(t, pgxoutbox.Migrate(ctx, pool, table), "again: idempotent")
			var indexes int
			require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND tablename = $2",
				schema, table).Scan(&indexes))
			assert.Equal(t, 4, indexes, "the primary key and the three indexes of schema.sql")

			tr := newTestRedis(t)
			d := tr.newDispatcher(t, tr.client(t))
			c := newCounter(t)
			c.subscribe(t, d, "")
			runInBackground(t, "Dispatcher.Run", d.Run)
			// A minute between polls: within the test, only the table's NOTIFY channel (or the wake
			// that follows its LISTEN) runs a pass after the first.
			o, err := pgxoutbox.New(pool, d, pgxoutbox.Options{Table: table, PollInterval: pgxoutbox.MaxPollInterval})
			require.NoError(t, err)
			// w writes e2 and e3: its first transaction carries a NOTIFY (o's may not, within its
			// NotifyInterval of the first).
			w, err := pgxoutbox.New(pool, d, pgxoutbox.Options{Table: table})
			require.NoError(t, err)
			commit := func(o *pgxoutbox.Outbox, evts ...webhooks.Event) {
				tx := begin(t, ctx, pool)
				for _, evt := range evts {
					require.NoError(t, o.EnqueueTx(ctx, tx, evt))
				}
				require.NoError(t, tx.Commit(ctx))
			}
			commit(o, webhooks.Event{Type: "a.b", ID: "e1"})
			runInBackground(t, "Outbox.Run", o.Run)
			eventually(t, 30*time.Second, func() bool { return c.count("e1") == 1 }, "the first pass relays e1")
			commit(w, webhooks.Event{Type: "a.b", ID: "e2"}, webhooks.Event{Type: "a.b", ID: "e3", OrderKey: "k"})
			eventually(t, 30*time.Second, func() bool { return c.count("e2") == 1 && c.count("e3") == 1 },
				"a pass woken through the channel relays e2 and e3 (the next poll is a minute away)")
			// The relay deletes a row once its event is accepted; the receiver may have it before then.
			eventually(t, 30*time.Second, func() bool {
				var n int
				require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM "`+table+`"`).Scan(&n))
				return n == 0
			}, "the relay emptied the table")
			st, err := o.Stats(ctx)
			require.NoError(t, err)
			assert.Zero(t, st.Pending+st.Held, "Stats reads the table")
		})
	}
}
