// Package events is what Dispatch and Enqueue make of an event before anything is claimed: its
// checks (the root's syntax checks, the operational event types reserved to the library, the catalog
// of event types) and its request body (Encoder).
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/eventtypes"
	"github.com/smartdrop/webhooks/internal/schema"
	"github.com/smartdrop/webhooks/internal/types"
)

// Encoder checks and encodes events. Every field is set by the Dispatcher that holds it.
type Encoder struct {
	Now             func() time.Time // the timestamp of an event with a zero Time
	MaxPayloadBytes int              // Options.MaxPayloadBytes
	// Validate checks an event's type, tenant, order key and id (the root's validateEvent).
	Validate func(types.Event) error
	// Reserved refuses an operational event type while the library sends them (notify.Notifier).
	Reserved func(eventType string) error
	Catalog  *eventtypes.Cache // the catalog of event types
	// RequireTypes refuses an event whose type is not in the catalog (Options.RequireEventTypes).
	RequireTypes bool
}

// wireEvent is the request body.
type wireEvent struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// Encode is evt's request body: an error wraps types.ErrInvalidEvent for data that does not encode or
// a body longer than MaxPayloadBytes.
func (e *Encoder) Encode(evt types.Event) ([]byte, error) {
	at := evt.Time
	if at.IsZero() {
		at = e.Now()
	}
	data, err := types.EventData(evt.Data)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(wireEvent{ID: evt.ID, Type: evt.Type, Timestamp: at.UTC(), Data: data})
	if err != nil {
		return nil, fmt.Errorf("%w: encode data: %w", types.ErrInvalidEvent, err)
	}
	if len(body) > e.MaxPayloadBytes {
		return nil, fmt.Errorf("%w: encoded body is %d bytes, more than Options.MaxPayloadBytes (%d): send less data, or raise MaxPayloadBytes",
			types.ErrInvalidEvent, len(body), e.MaxPayloadBytes)
	}
	return body, nil
}

// Check runs every check of evt and returns its request body (the Dispatcher's ValidateEvent, and
// accept's first step). strict: a catalog that cannot be read (and was never read) is an error
// wrapping types.ErrNotAccepted, not a check skipped.
func (e *Encoder) Check(ctx context.Context, evt types.Event, strict bool) ([]byte, error) {
	if err := e.Validate(evt); err != nil {
		return nil, err
	}
	if err := e.Reserved(evt.Type); err != nil {
		return nil, err
	}
	body, err := e.Encode(evt)
	if err != nil {
		return nil, err
	}
	if err := e.CheckType(ctx, evt.ID, evt.Type, body, strict); err != nil {
		return nil, err
	}
	return body, nil
}

// CheckType holds an event (its encoded body) to the catalog of event types: its data to its type's
// schema, and under RequireTypes its type to the catalog.
func (e *Encoder) CheckType(ctx context.Context, id, typ string, body []byte, strict bool) error {
	cat, err := e.Catalog.Get(ctx, !strict)
	if cat == nil {
		if err != nil && strict {
			return fmt.Errorf("%w: event %s: %w", types.ErrNotAccepted, id, err)
		}
		return nil
	}
	t := cat.Type(typ)
	if t == nil {
		if e.RequireTypes {
			return fmt.Errorf("%w: type %q is not in the catalog of event types (Options.RequireEventTypes)", types.ErrInvalidEvent, typ)
		}
		return nil
	}
	v, err := t.Validator(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("webhooks: event %s: %w", id, err)
	case err != nil:
		return fmt.Errorf("%w: type %s: its schema cannot be used (update the type): %w", types.ErrInvalidEvent, typ, err)
	case v == nil:
		return nil
	}
	err = v.Validate(ctx, eventtypes.Data(body))
	var failed *schema.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &failed):
		return fmt.Errorf("%w: data of %s fails its schema %w", types.ErrInvalidEvent, typ, err)
	case ctx.Err() != nil && !errors.Is(err, schema.ErrOverBudget):
		return fmt.Errorf("webhooks: event %s: %w", id, err) // not the event's fault: it may be sent again
	}
	return fmt.Errorf("%w: data of %s: %w", types.ErrInvalidEvent, typ, err) // a *schema.DataError, ErrOverBudget
}
