package pgxoutbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/pgxoutbox"
)

// syncBuffer is a bytes.Buffer safe for the relay's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestRowsFailingTheirSchemaAreHeldBriefly: rows enqueued before their type's schema, whose data then
// fails it, are held after one try, not retried for ever (issue 43, finding 1: a validation that
// outlasted RelayTimeout counted a failure and was retried while the key's next rows waited):
// data whose validation would take more than the bound of work, and a 100 KB value failing its
// format. Each row's last_error is at most MaxLastErrorBytes and quotes at most 100 bytes of the
// value, and the relay's log line quotes none of it (finding 7: a 100 KB last_error, a log line
// carrying a card-number-like value). EnqueueTx of the costly data under a 100 ms context is refused
// with ErrInvalidEvent. Broken by logging the hold's error text (the log carries the value's start).
func TestRowsFailingTheirSchemaAreHeldBriefly(t *testing.T) {
	f := newFixture(t, pgxoutbox.Options{})
	ctx := context.Background()
	var logs syncBuffer
	relay, err := pgxoutbox.New(f.pool, f.d, pgxoutbox.Options{Table: f.table, PollInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	card := strings.Repeat("4111111111111111", 6400) // 102,400 bytes
	nested := json.RawMessage(strings.Repeat("[", 60) + strings.Repeat("]", 60))
	f.commit(t, webhooks.Event{Type: "card.added", ID: "card", Data: map[string]string{"email": card}},
		webhooks.Event{Type: "tree.nested", ID: "nested", OrderKey: "k", Data: nested},
		webhooks.Event{Type: "tree.planted", ID: "after", OrderKey: "k"})
	_, err = f.d.EventTypes().Create(ctx, webhooks.EventType{Name: "card.added", Schema: json.RawMessage(`{"properties": {"email": {"format": "email"}}}`)})
	require.NoError(t, err)
	_, err = f.d.EventTypes().Create(ctx, webhooks.EventType{Name: "tree.nested", Schema: json.RawMessage(
		`{"$defs": {"r": {"type": "array", "items": {"$ref": "#/$defs/r"}, "contains": {"$ref": "#/$defs/r"}}}, "$ref": "#/$defs/r"}`)})
	require.NoError(t, err)

	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	start := time.Now()
	err = f.o.EnqueueTx(cctx, begin(t, ctx, f.pool), webhooks.Event{Type: "tree.nested", ID: "direct", Data: nested})
	t.Logf("EnqueueTx under a 100ms context returned after %s", time.Since(start))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) { // a slow machine's context may end first
		require.ErrorIs(t, err, webhooks.ErrInvalidEvent)
		assert.Contains(t, err.Error(), "takes more work than the bound")
	}

	runInBackground(t, "relay", relay.Run)
	rows := func() map[string]heldRow { return f.rows(t) }
	eventually(t, 10*time.Second, func() bool { r := rows(); return len(r) == 2 && r["card"].held && r["nested"].held }, "both rows held")
	for _, c := range []*counter{f.a, f.b} {
		eventually(t, 10*time.Second, func() bool { return c.count("after") == 1 }, "the key's next row relayed")
	}
	held := rows()
	for id, r := range held {
		assert.Equal(t, 1, r.failures, "%s: tried once", id)
		assert.LessOrEqual(t, len(r.lastError), pgxoutbox.MaxLastErrorBytes, id)
		assert.NotContains(t, r.lastError, card[:101], id)
	}
	assert.Contains(t, held["nested"].lastError, "takes more work than the bound")
	assert.Contains(t, held["card"].lastError, "at /email: keyword format:")
	assert.Contains(t, logs.String(), "row held", "the hold is logged")
	assert.NotContains(t, logs.String(), card[:16], "the log quotes nothing of the data")
}
