package pgxoutbox_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/pgxoutbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCommitDeliversRollbackDoesNot: an event enqueued in a transaction that commits is delivered
// once to each subscribed webhook; one whose transaction rolls back never is; one id enqueued in two
// committed transactions is delivered once. Broken by deleting the rows before Enqueue accepted them
// (TestRelayCrashSafety catches that one) or by enqueueing outside the transaction (the rolled-back
// event arrives).
func TestCommitDeliversRollbackDoesNot(t *testing.T) {
	f := newFixture(t, pgxoutbox.Options{})
	f.relay(t)
	ctx := context.Background()

	f.commit(t, webhooks.Event{Type: "order.paid", ID: "committed", Data: payload{Key: "x"}})
	f.delivered(t, 10*time.Second, "committed")

	tx := begin(t, ctx, f.pool)
	require.NoError(t, f.o.EnqueueTx(ctx, tx, webhooks.Event{Type: "order.paid", ID: "rolled-back"}))
	require.NoError(t, tx.Rollback(ctx))

	f.commit(t, webhooks.Event{Type: "order.paid", ID: "twice"})
	f.commit(t, webhooks.Event{Type: "order.paid", ID: "twice"})
	f.commit(t, webhooks.Event{Type: "order.paid", ID: "after"})
	f.delivered(t, 10*time.Second, "twice", "after")
	f.drained(t, 10*time.Second)
	time.Sleep(200 * time.Millisecond) // anything still on its way arrives
	for _, c := range []*counter{f.a, f.b} {
		assert.Zero(t, c.count("rolled-back"), "a rolled-back event is never delivered")
		assert.Equal(t, 1, c.count("twice"), "one id in two transactions is delivered once")
		_, total := c.distinct()
		assert.Equal(t, 3, total, "nothing else arrived")
	}
}

// TestEnqueueSQLTx: the same through database/sql (the pgx stdlib driver): commit delivers once,
// rollback never, one id twice once.
func TestEnqueueSQLTx(t *testing.T) {
	f := newFixture(t, pgxoutbox.Options{})
	f.relay(t)
	ctx := context.Background()
	db := stdlib.OpenDBFromPool(f.pool)
	t.Cleanup(func() { _ = db.Close() })

	inTx := func(commit bool, evts ...webhooks.Event) {
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		for _, evt := range evts {
			require.NoError(t, f.o.EnqueueSQLTx(ctx, tx, evt))
		}
		if commit {
			require.NoError(t, tx.Commit())
		} else {
			require.NoError(t, tx.Rollback())
		}
	}
	inTx(true, webhooks.Event{Type: "order.paid", ID: "sql-committed", OrderKey: "k1", Time: time.Unix(1, 999)})
	inTx(false, webhooks.Event{Type: "order.paid", ID: "sql-rolled-back"})
	inTx(true, webhooks.Event{Type: "order.paid", ID: "sql-twice"})
	inTx(true, webhooks.Event{Type: "order.paid", ID: "sql-twice"}, webhooks.Event{Type: "order.paid", ID: "sql-after"})
	f.delivered(t, 10*time.Second, "sql-committed", "sql-twice", "sql-after")
	f.drained(t, 10*time.Second)
	time.Sleep(200 * time.Millisecond)
	assert.Zero(t, f.a.count("sql-rolled-back"))
	assert.Zero(t, f.b.count("sql-rolled-back"))
	assert.Contains(t, string(f.a.body("sql-committed")), `"timestamp":"1970-01-01T00:00:01.000000999Z"`,
		"the event's time to the nanosecond")
}

// TestRelayedBodyIsTheDirectEnqueuesBody: the body the outbox delivers is byte for byte the body a
// direct Enqueue of the same event sends (HTML-escaped characters, unicode, numbers, nanoseconds of
// a time in another zone). Broken by storing the data as jsonb (keys reordered, spaces added) or the
// time as a timestamptz alone (microseconds).
func TestRelayedBodyIsTheDirectEnqueuesBody(t *testing.T) {
	f := newFixture(t, pgxoutbox.Options{})
	f.relay(t)
	ctx := context.Background()
	data := map[string]any{"z": "<a href=\"x\">&</a>", "a": []any{1.5, 1e21, "é\u2028"}, "m": map[string]int{"b": 2, "a": 1}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("UTC+1", 3600))
	f.commit(t, webhooks.Event{Type: "order.paid", ID: "same-body", Data: data, Time: at})
	f.delivered(t, 10*time.Second, "same-body")

	// The same event enqueued directly, on another prefix, to a third endpoint.
	tr2 := newTestRedis(t)
	d2 := tr2.newDispatcher(t, tr2.client(t))
	direct := newCounter(t)
	direct.subscribe(t, d2, "")
	_, err := d2.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "same-body", Data: data, Time: at})
	require.NoError(t, err)
	require.Equal(t, 1, direct.count("same-body"))
	assert.Equal(t, string(direct.body("same-body")), string(f.a.body("same-body")))
}

// TestEnqueueTxRefusesWhatEnqueueRefuses: an event Enqueue refuses before it claims anything (data
// failing its type's schema included) is refused by EnqueueTx with the same error, and nothing is written (the transaction goes on). Broken by
// skipping ValidateEvent (the row is written) or by checking something else (the errors differ).
func TestEnqueueTxRefusesWhatEnqueueRefuses(t *testing.T) {
	pool := newPool(t, pgURL(t), 4)
	table := newTable(t, pool)
	tr := newTestRedis(t)
	opts := tr.dispatcherOptions()
	opts.OperationalEvents, opts.MaxPayloadBytes = true, 512
	d, err := webhooks.New(tr.client(t), opts)
	require.NoError(t, err)
	o := newOutbox(t, pool, d, table)
	ctx := context.Background()
	_, err = d.EventTypes().Create(ctx, webhooks.EventType{Name: "typed.ev", Schema: json.RawMessage(`{"properties": {"n": {"type": "integer"}}}`)})
	require.NoError(t, err)
	tx := begin(t, ctx, pool)
	for _, evt := range []webhooks.Event{
		{Type: "typed.ev", ID: "e", Data: map[string]any{"n": "x"}}, // data that fails its type's schema
		{ID: "no-type"},
		{Type: "a..b", ID: "e"},
		{Type: "a.b"},
		{Type: "a.b", ID: "e", Tenant: strings.Repeat("t", 1000)},
		{Type: "a.b", ID: "e", OrderKey: "k\x00"},
		{Type: webhooks.EventCircuitOpened, ID: "e"},
		{Type: "a.b", ID: "e", Data: func() {}},
		// 200 bytes, 1200 escaped; with a time, as the body's size depends on it (a zero Time is
		// EnqueueTx's now, and Enqueue's own now here).
		{Type: "a.b", ID: "e", Data: strings.Repeat("<", 200), Time: time.Unix(1, 0)},
		{Type: "a.b", ID: "e", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		err := o.EnqueueTx(ctx, tx, evt)
		require.Error(t, err, "%+v", evt)
		assert.ErrorIs(t, err, webhooks.ErrInvalidEvent)
		_, want := d.Enqueue(ctx, evt)
		require.Error(t, want)
		assert.Equal(t, want.Error(), err.Error(), "EnqueueTx's error is Enqueue's")
	}
	var n int
	require.NoError(t, tx.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n), "the transaction goes on")
	assert.Zero(t, n, "nothing was written")
	require.NoError(t, o.EnqueueTx(ctx, tx, webhooks.Event{Type: "a.b", ID: "fine", Data: strings.Repeat("x", 100)}))
	require.NoError(t, tx.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n))
	assert.Equal(t, 1, n)
}

// TestEnqueueOnAMissingTable: EnqueueTx on a table that was never migrated fails with
// ErrNotMigrated; so do Run and Stats.
func TestEnqueueOnAMissingTable(t *testing.T) {
	pool := newPool(t, pgURL(t), 4)
	tr := newTestRedis(t)
	d := tr.newDispatcher(t, tr.client(t))
	o := newOutbox(t, pool, d, "wht_never_migrated_"+randomHex(3))
	ctx := context.Background()
	tx := begin(t, ctx, pool)
	err := o.EnqueueTx(ctx, tx, webhooks.Event{Type: "a.b", ID: "e"})
	assert.ErrorIs(t, err, pgxoutbox.ErrNotMigrated)
	_, err = o.Stats(ctx)
	assert.ErrorIs(t, err, pgxoutbox.ErrNotMigrated)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = o.Run(rctx)
	assert.ErrorIs(t, err, pgxoutbox.ErrNotMigrated, "Run stops at once")
	assert.NoError(t, rctx.Err())
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	sqlTx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = sqlTx.Rollback() }()
	assert.ErrorIs(t, o.EnqueueSQLTx(ctx, sqlTx, webhooks.Event{Type: "a.b", ID: "e"}), pgxoutbox.ErrNotMigrated)
}
