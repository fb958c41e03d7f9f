package webhooks

import (
	"context"
	"fmt"

	"github.com/smartdrop/webhooks/internal/eventtypes"
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
	_, err := d.validateAndEncode(ctx, evt, false)
	return err
}

// validateAndEncode is ValidateEvent that also returns the event's encoded body, for accept. strict:
// a catalog that cannot be read (and was never read) is an error wrapping ErrNotAccepted, not a
// check skipped.
func (d *Dispatcher) validateAndEncode(ctx context.Context, evt Event, strict bool) ([]byte, error) {
	if err := validateEvent(evt); err != nil {
		return nil, err
	}
	if err := d.notify.Reserved(evt.Type); err != nil {
		return nil, err
	}
	body, err := d.encode(evt)
	if err != nil {
		return nil, err
	}
	if err := d.checkEventType(ctx, evt.ID, evt.Type, body, strict); err != nil {
		return nil, err
	}
	return body, nil
}

// checkEventType holds an event (its encoded body) to the catalog of event types: its data to its
// type's schema, and under Options.RequireEventTypes its type to the catalog.
func (d *Dispatcher) checkEventType(ctx context.Context, id, typ string, body []byte, strict bool) error {
	cat, err := d.eventTypes.cache.Get(ctx, !strict)
	if cat == nil {
		if err != nil && strict {
			return fmt.Errorf("%w: event %s: %w", ErrNotAccepted, id, err)
		}
		return nil
	}
	e := cat.Type(typ)
	if e == nil {
		if d.opts.RequireEventTypes {
			return fmt.Errorf("%w: type %q is not in the catalog of event types (Options.RequireEventTypes)", ErrInvalidEvent, typ)
		}
		return nil
	}
	v, err := e.Validator()
	if err != nil {
		return fmt.Errorf("%w: type %s: its schema cannot be used: %w", ErrInvalidEvent, typ, err)
	}
	if v == nil {
		return nil
	}
	if err := v.Validate(eventtypes.Data(body)); err != nil {
		return fmt.Errorf("%w: data of %s fails its schema %w", ErrInvalidEvent, typ, err)
	}
	return nil
}
