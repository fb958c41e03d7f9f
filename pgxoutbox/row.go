package pgxoutbox

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks"
)

// row is one outbox row: an event as EnqueueTx stored it, and as the relay reads it back.
type row struct {
	id                                   int64
	tenant, orderKey, eventID, eventType string
	keyLock                              int64
	// data is the event's Data as encoding/json encoded it: handed back to Enqueue as a
	// json.RawMessage, which encoding/json writes as it is, so the delivered body is byte for byte
	// the one a direct Enqueue of the event makes.
	data []byte
	// occurredAt is the event's time to the microsecond (timestamptz), occurredNs the nanoseconds
	// below it: together, the event's exact time.
	occurredAt time.Time
	occurredNs int16
	failures   int32
	// behind is set by the claim on an ordered row of a key with an older pending row that this
	// pass did not get: the pass leaves the key's rows.
	behind bool
}

// newRow is the row of evt, whose Data is already encoded as data, in table.
func newRow(table string, evt webhooks.Event, data []byte) row {
	t := evt.Time.UTC()
	ns := t.Nanosecond() % 1000
	return row{tenant: evt.Tenant, orderKey: evt.OrderKey, eventID: evt.ID, eventType: evt.Type,
		keyLock: keyLock(table, evt.Tenant, evt.OrderKey), data: data,
		occurredAt: t.Add(-time.Duration(ns)), occurredNs: int16(ns)}
}

// args are the row's values in rowColumns order.
func (r row) args() []any {
	return []any{r.tenant, r.orderKey, r.keyLock, r.eventID, r.eventType, r.data, r.occurredAt, r.occurredNs}
}

// event is the event the row stores, as it was given to EnqueueTx (its Data as a json.RawMessage).
// A row written by hand with a time it cannot hold is an error (data that is not JSON is Enqueue's
// ErrInvalidEvent).
func (r row) event() (webhooks.Event, error) {
	if r.occurredNs < 0 || r.occurredNs > 999 {
		return webhooks.Event{}, fmt.Errorf("occurred_ns %d is not in [0, 999]", r.occurredNs)
	}
	return webhooks.Event{Type: r.eventType, ID: r.eventID, Tenant: r.tenant, OrderKey: r.orderKey,
		Data: json.RawMessage(r.data), Time: r.occurredAt.Add(time.Duration(r.occurredNs)).UTC()}, nil
}
