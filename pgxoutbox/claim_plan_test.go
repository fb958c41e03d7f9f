package pgxoutbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestClaimReadsThePendingIndexInOrder: under a pass's settings the claim's plan is an index scan of
// the pending index, in id order, with no sort, also on a small analyzed table (where the planner
// would otherwise read it all and sort it, trying the relay lock of every order key in it). Broken by
// dropping passSettings' planner settings (a Sort over a Seq Scan appears).
func TestClaimReadsThePendingIndexInOrder(t *testing.T) {
	url := os.Getenv("WEBHOOKS_PG_URL")
	if url == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("WEBHOOKS_PG_URL is not set in CI")
		}
		t.Skip("needs PostgreSQL: set WEBHOOKS_PG_URL")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	table := fmt.Sprintf("wht_plan_%x", rand.Uint32())
	require.NoError(t, Migrate(ctx, conn, table))
	defer func() { _, _ = conn.Exec(ctx, "DROP TABLE "+table) }()
	_, err = conn.Exec(ctx, "INSERT INTO "+table+" (tenant, order_key, key_lock, event_id, event_type, data, occurred_at)"+
		" SELECT '', 'k' || (i % 5), 1 + i % 5, 'e' || i, 't', '{}', now() FROM generate_series(1, 30) AS i")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "ANALYZE "+table)
	require.NoError(t, err)

	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, passSettings, "10000")
	require.NoError(t, err)
	rows, err := tx.Query(ctx, "EXPLAIN (COSTS OFF) "+newStatements(table).claim, 1600, 100, relayLockSalt, 0)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	plan := strings.Join(lines, "\n")
	require.Regexp(t, `->  LockRows\n\s+->  Index Scan using `+table+`_pending on `+table+` `, plan,
		"the rows are locked as the pending index's scan reaches them")
	require.NotContains(t, plan, "Sort", plan)
	require.NotContains(t, plan, "Seq Scan", plan)
}
