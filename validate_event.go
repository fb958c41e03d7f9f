package webhooks

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/events"
)

// ValidateEvent runs the checks Dispatch and Enqueue make on evt before anything is claimed, and
// returns the error they would return for it (wrapping ErrInvalidEvent), or nil: the type, id, tenant
// and order key are well formed, the type is not an operational event type while
// Options.OperationalEvents is on, the event encodes within Options.MaxPayloadBytes (a zero Time is
// encoded as now), and its data satisfies its type's schema in the catalog of event types (and its
// type is in the catalog, under Options.RequireEventTypes). Its only I/O is the catalog's: read from
// this process's cache, which reads Redis at most once per second, waiting at most 250ms; when Redis
// cannot answer, the catalog last read is used, and when none ever was, the catalog is not checked
// (Dispatch and Enqueue check it then). It cannot tell whether an id was accepted before as another event
// (ErrEventConflict) or with another order key (ErrOrderKeyConflict): those are known only to the
// claim. A producer that stores an event to dispatch it later (such as the pgxoutbox module) calls it
// to refuse, before anything is written, what Enqueue would refuse.
func (d *Dispatcher) ValidateEvent(ctx context.Context, evt Event) error {
	_, err := d.events.Check(ctx, evt, false)
	return err
}

// newEncoder is d's checks and encoding of an event (internal/events).
func newEncoder(d *Dispatcher) *events.Encoder {
	return &events.Encoder{Now: func() time.Time { return d.now() }, MaxPayloadBytes: d.opts.MaxPayloadBytes,
		Validate: validateEvent, Reserved: d.notify.Reserved, Catalog: d.eventTypes.cache, RequireTypes: d.opts.RequireEventTypes}
}
