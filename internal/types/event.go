package types

import (
	"strings"
	"time"
)

// The event a producer dispatches.

// Event is one domain event. Type names what happened (`pool.created`); ID is the caller's own id for
// this occurrence and, with the webhook id, the unit of idempotency: an (webhook, event id) pair is
// delivered once however often it is dispatched. Data is encoded with encoding/json.
//
// An event id names one event: the type, data and time of the first Dispatch that creates a delivery
// for it are what every later delivery of that id carries.
type Event struct {
	Type string
	ID   string
	// Tenant is the customer the event belongs to: it reaches only that tenant's webhooks, and its ID
	// is scoped by it (two tenants' "evt_1" are two events). "" reaches only webhooks with no tenant.
	Tenant string
	// Data is the event's payload, encoded with encoding/json as the body's "data"; a []byte or a
	// json.RawMessage is taken as JSON text as it is (a []byte that is not valid JSON is refused with
	// ErrInvalidEvent).
	Data any
	// Time is when the event happened; the zero value means the time of Dispatch.
	Time time.Time
	// OrderKey, when set, orders the event's deliveries: for each webhook, the deliveries of events
	// with the same OrderKey (within the event's Tenant) are attempted one at a time, in the order the
	// events were accepted, each only once the one before it succeeded or failed for good (see
	// Options.BlockKeyOnFailure). Other keys, webhooks and unordered events never wait for them. An
	// event id keeps the key of its first Dispatch: dispatching it again with another key (or none)
	// is refused with ErrOrderKeyConflict. 1–256 bytes of printable UTF-8; "" (the default) means
	// unordered.
	OrderKey string
}

// TestEventType is the type of the event SendTest sends.
const TestEventType = "webhook.test"

// TestEventIDPrefix starts the id of every event SendTest sends.
const TestEventIDPrefix = "test_"

// IsTestDelivery reports whether a delivery was made by SendTest, which reaches disabled webhooks too.
func IsTestDelivery(d *Delivery) bool {
	return d.EventType == TestEventType && strings.HasPrefix(d.EventID, TestEventIDPrefix)
}
