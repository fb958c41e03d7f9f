package pgxoutbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/pgxoutbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRowsInvalidAtRelayAreHeld: rows whose event Enqueue refuses for good when the relay gets to
// them (the relay's Dispatcher has a lower MaxPayloadBytes and reserves the operational types; an id
// enqueued again with other data; an id enqueued again with another order key) are kept with their
// error, counted by Stats as held, tried once and never again, while the rows around them go on, an
// ordered one's key included. Broken by treating the refusal as a transient failure (the rows are
// retried at every pass: failures grows, Held stays 0) or by deleting them (Held is 0, the rows are
// gone).
func TestRowsInvalidAtRelayAreHeld(t *testing.T) {
	f := newFixture(t, pgxoutbox.Options{})
	ctx := context.Background()
	opts := f.tr.dispatcherOptions()
	opts.MaxPayloadBytes, opts.OperationalEvents = 400, true
	strict, err := webhooks.New(f.tr.client(t), opts)
	require.NoError(t, err)
	relay, err := pgxoutbox.New(f.pool, strict, pgxoutbox.Options{Table: f.table, PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)

	big := strings.Repeat("x", 500)
	f.commit(t, webhooks.Event{Type: "order.paid", ID: "conflict", Data: payload{Key: "a"}},
		webhooks.Event{Type: "order.paid", ID: "key-conflict", OrderKey: "k1"})
	runInBackground(t, "relay", relay.Run)
	f.delivered(t, 10*time.Second, "conflict", "key-conflict")
	f.commit(t,
		webhooks.Event{Type: "order.paid", ID: "too-big", Data: big},
		webhooks.Event{Type: webhooks.EventCircuitOpened, ID: "reserved"},
		webhooks.Event{Type: "order.paid", ID: "conflict", Data: payload{Key: "b"}},
		webhooks.Event{Type: "order.paid", ID: "key-conflict", OrderKey: "k2"},
		webhooks.Event{Type: "order.updated", ID: "k-1", OrderKey: "k", Data: payload{Key: "k", Seq: 1}},
		webhooks.Event{Type: "order.updated", ID: "k-2-too-big", OrderKey: "k", Data: big},
		webhooks.Event{Type: "order.updated", ID: "k-3", OrderKey: "k", Data: payload{Key: "k", Seq: 3}},
		webhooks.Event{Type: "order.paid", ID: "fine"})
	f.delivered(t, 10*time.Second, "k-1", "k-3", "fine")
	assert.Equal(t, []int{1, 3}, f.a.keyOrder()["k"], "a held row does not stop its key")

	readRows := func() map[string]heldRow { return f.rows(t) }
	eventually(t, 10*time.Second, func() bool {
		rows := readRows()
		for _, r := range rows {
			if !r.held {
				return false
			}
		}
		return len(rows) == 5
	}, "five rows held")
	time.Sleep(500 * time.Millisecond) // 25 polls
	rows := readRows()
	require.Len(t, rows, 5)
	for _, id := range []string{"too-big", "reserved", "conflict", "key-conflict", "k-2-too-big"} {
		r, ok := rows[id]
		require.True(t, ok, "row %s kept", id)
		assert.True(t, r.held, "row %s held", id)
		assert.Equal(t, 1, r.failures, "row %s tried once, not again", id)
		assert.Contains(t, r.lastError, "webhooks:", "row %s keeps its error", id)
	}
	assert.Contains(t, rows["too-big"].lastError, "more than Options.MaxPayloadBytes (400)")
	assert.Contains(t, rows["reserved"].lastError, "operational event type")
	assert.Contains(t, rows["conflict"].lastError, "another type or data")
	assert.Contains(t, rows["key-conflict"].lastError, "order key")

	s, err := f.o.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, pgxoutbox.Stats{Held: 5}, *s)
	for _, c := range []*counter{f.a, f.b} {
		for _, id := range []string{"too-big", "reserved", "k-2-too-big"} {
			assert.Zero(t, c.count(id), "%s never delivered", id)
		}
		assert.Equal(t, 1, c.count("conflict"), "the first event of the id, once")
	}
}

// heldRow is what a test reads of an outbox row.
type heldRow struct {
	eventID, lastError string
	failures           int
	held               bool
}

// rows reads the fixture's table by event id.
func (f *fixture) rows(t testing.TB) map[string]heldRow {
	t.Helper()
	rows, err := f.pool.Query(context.Background(), "SELECT event_id, coalesce(last_error, ''), failures, held_at IS NOT NULL FROM "+f.table)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]heldRow{}
	for rows.Next() {
		var r heldRow
		require.NoError(t, rows.Scan(&r.eventID, &r.lastError, &r.failures, &r.held))
		out[r.eventID] = r
	}
	require.NoError(t, rows.Err())
	return out
}
