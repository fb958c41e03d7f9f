package pgxoutbox_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/pgxoutbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewChecksOptionsAndDoesNoIO: New refuses options out of bounds with ErrInvalidOptions (which
// is also webhooks.ErrInvalidOptions), and does no I/O: it succeeds on a pool and a Redis that
// nothing answers.
func TestNewChecksOptionsAndDoesNoIO(t *testing.T) {
	cfg, err := pgxpool.ParseConfig("postgres://nobody@127.0.0.1:1/none?connect_timeout=1&pool_max_conns=4")
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg) // connects lazily
	require.NoError(t, err)
	defer pool.Close()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	d, err := webhooks.New(rdb, webhooks.Options{})
	require.NoError(t, err)

	_, err = pgxoutbox.New(pool, d, pgxoutbox.Options{})
	require.NoError(t, err, "no I/O")
	for _, opts := range []pgxoutbox.Options{
		{Table: "Outbox"},
		{Table: "public.outbox"},
		{Table: strings.Repeat("t", pgxoutbox.MaxTableLen+1)},
		{BatchSize: -1},
		{BatchSize: pgxoutbox.MaxBatchSize + 1},
		{PollInterval: time.Millisecond},
		{NotifyInterval: time.Hour},
		{Concurrency: 4}, // the pool has 4 connections: Run needs 5
		{EnqueueConcurrency: -1},
		{RelayTimeout: time.Millisecond},
		{MaxBackoff: time.Hour},
	} {
		_, err := pgxoutbox.New(pool, d, opts)
		assert.ErrorIs(t, err, pgxoutbox.ErrInvalidOptions, "%+v", opts)
		assert.ErrorIs(t, err, webhooks.ErrInvalidOptions, "%+v", opts)
	}
	_, err = pgxoutbox.New(nil, d, pgxoutbox.Options{})
	assert.ErrorIs(t, err, pgxoutbox.ErrInvalidOptions)
	_, err = pgxoutbox.New(pool, nil, pgxoutbox.Options{})
	assert.ErrorIs(t, err, pgxoutbox.ErrInvalidOptions)
	_, err = pgxoutbox.New(pool, d, pgxoutbox.Options{Table: "my_outbox", Concurrency: 3, NotifyInterval: -1})
	assert.NoError(t, err)
}

// TestMigrate: Migrate creates the table and its indexes, may run again, and may run from several
// replicas at once; Schema is schema.sql with the table's name.
func TestMigrate(t *testing.T) {
	pool := newPool(t, pgURL(t), 8)
	table := newTable(t, pool) // Migrate once
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	fresh := "wht_migrate_" + randomHex(3)
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+fresh) })
	for i := range errs {
		wg.Go(func() { errs[i] = pgxoutbox.Migrate(ctx, pool, fresh) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err, "replicas migrating at once")
	}
	require.NoError(t, pgxoutbox.Migrate(ctx, pool, table), "again")
	var indexes []string
	rows, err := pool.Query(ctx, "SELECT indexname FROM pg_indexes WHERE tablename = $1 ORDER BY indexname", table)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		indexes = append(indexes, s)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{table + "_held", table + "_keys", table + "_pending", table + "_pkey"}, indexes)

	schema, err := pgxoutbox.Schema("")
	require.NoError(t, err)
	assert.Contains(t, schema, `CREATE TABLE IF NOT EXISTS "webhooks_outbox" (`)
	schema, err = pgxoutbox.Schema("app_outbox")
	require.NoError(t, err)
	assert.NotContains(t, schema, "webhooks_outbox")
	assert.Contains(t, schema, `CREATE INDEX IF NOT EXISTS "app_outbox_pending" ON "app_outbox" (id) WHERE held_at IS NULL;`)
	_, err = pgxoutbox.Schema("Bad Name")
	assert.ErrorIs(t, err, pgxoutbox.ErrInvalidOptions)

	// Migrate inside the caller's transaction: rolled back with it.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	rolled := "wht_rolled_" + randomHex(3)
	require.NoError(t, pgxoutbox.Migrate(ctx, tx, rolled))
	require.NoError(t, tx.Rollback(ctx))
	var exists bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", rolled).Scan(&exists))
	assert.False(t, exists)
}

// TestStatsWhileRedisIsDown: while Redis refuses the relay's Enqueue, the rows stay pending with
// their error and failure count (Stats: Pending, Failing, OldestPending); once Redis answers, the
// relay carries on by itself and the table drains. The Redis is a proxy the test breaks.
func TestStatsWhileRedisIsDown(t *testing.T) {
	f := newFixture(t, pgxoutbox.Options{})
	ctx := context.Background()
	down := &brokenRedis{}
	rdb := newRedisClient(f.tr.addr, -1)
	rdb.AddHook(down)
	t.Cleanup(func() { _ = rdb.Close() })
	relayD, err := webhooks.New(rdb, f.tr.dispatcherOptions())
	require.NoError(t, err)
	o, err := pgxoutbox.New(f.pool, relayD, pgxoutbox.Options{Table: f.table, PollInterval: 20 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond})
	require.NoError(t, err)

	s, err := o.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, pgxoutbox.Stats{}, *s, "an empty outbox")

	down.set(true)
	f.commit(t, webhooks.Event{Type: "order.paid", ID: "waits-1"}, webhooks.Event{Type: "order.paid", ID: "waits-2"})
	runInBackground(t, "relay", o.Run)
	eventually(t, 10*time.Second, func() bool {
		s, err := o.Stats(ctx)
		require.NoError(t, err)
		return s.Failing > 0
	}, "a failed relay is counted")
	s, err = o.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.Pending)
	assert.Zero(t, s.Held)
	assert.Greater(t, s.OldestPending, time.Duration(0))
	var lastError string
	require.NoError(t, f.pool.QueryRow(ctx, "SELECT last_error FROM "+f.table+" WHERE failures > 0 LIMIT 1").Scan(&lastError))
	assert.Contains(t, lastError, "redis down (test)")

	down.set(false)
	f.delivered(t, 10*time.Second, "waits-1", "waits-2")
	f.drained(t, 10*time.Second)
	s, err = o.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, pgxoutbox.Stats{}, *s)
}
