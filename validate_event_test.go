package webhooks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValidateEventRefusesWhatEnqueueRefuses: for each event Enqueue refuses before its first I/O,
// ValidateEvent returns the same error; for an event Enqueue accepts it returns nil. Broken by making
// accept skip ValidateEvent's checks (they then disagree) or by a check that ValidateEvent skips.
func TestValidateEventRefusesWhatEnqueueRefuses(t *testing.T) {
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{OperationalEvents: true, MaxPayloadBytes: 1024})
	ctx := context.Background()
	cases := []struct {
		name string
		evt  Event
	}{
		{"no type", Event{ID: "e1"}},
		{"bad type", Event{Type: "a..b", ID: "e1"}},
		{"no id", Event{Type: "a.b"}},
		{"control in id", Event{Type: "a.b", ID: "e\x01"}},
		{"bad tenant", Event{Type: "a.b", ID: "e1", Tenant: strings.Repeat("t", 1000)}},
		{"bad order key", Event{Type: "a.b", ID: "e1", OrderKey: "k\n"}},
		{"operational type", Event{Type: EventCircuitOpened, ID: "e1"}},
		{"unencodable data", Event{Type: "a.b", ID: "e1", Data: make(chan int)}},
		// A fixed Time: a zero one encodes as now, whose RFC 3339 text varies in length (trailing zeros).
		{"too large", Event{Type: "a.b", ID: "e1", Data: strings.Repeat("x", 2000), Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}},
		{"time out of range", Event{Type: "a.b", ID: "e1", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			verr := d.ValidateEvent(ctx, c.evt)
			require.Error(t, verr)
			assert.ErrorIs(t, verr, ErrInvalidEvent)
			_, eerr := d.Enqueue(ctx, c.evt)
			require.Error(t, eerr)
			assert.Equal(t, eerr.Error(), verr.Error(), "the same error as Enqueue")
		})
	}
	ok := Event{Type: "a.b", ID: "e1", Tenant: "t1", OrderKey: "k1", Data: map[string]int{"n": 1}}
	require.NoError(t, d.ValidateEvent(ctx, ok))
	_, err := d.Enqueue(ctx, ok)
	require.NoError(t, err)
}

// TestValidateEventDoesNoIO: it answers on a Dispatcher whose Redis is unreachable: its checks of the
// event itself do no I/O, and a catalog of event types that cannot be read (and never was) is not
// checked rather than failing the call. Broken by a call to Redis before the static checks (the error
// then wraps a connection refusal, or the call hangs for the dial), or by a catalog read whose failure
// fails the call.
func TestValidateEventDoesNoIO(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	d, err := New(rdb, Options{KeyPrefix: "wht_validate_noio"})
	require.NoError(t, err)
	require.NoError(t, d.ValidateEvent(ctx, Event{Type: "a.b", ID: "e1"}))
	err = d.ValidateEvent(ctx, Event{Type: "a.b"})
	require.ErrorIs(t, err, ErrInvalidEvent)
	assert.False(t, errors.Is(err, ErrNotAccepted), "refused before any I/O")
}
