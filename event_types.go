package webhooks

// The catalog of event types: one for every tenant, the operator's (tenants read it through the
// portal). Each type is stored once, as JSON, in one registry hash; every change also replaces the
// catalog's version, which each process's cache compares (internal/eventtypes).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/eventtypes"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/schema"
	"github.com/smartdrop/webhooks/internal/types"
)

// Bounds of the catalog of event types.
const (
	// MaxEventTypes is the most types the catalog holds.
	MaxEventTypes = 1000
	// MaxEventTypeBytes bounds an event type's JSON (schema and examples included).
	MaxEventTypeBytes = 64 << 10
	// MaxEventTypeExamples is the most examples a type may have.
	MaxEventTypeExamples = 16
	// MaxCatalogBytes bounds the catalog's JSON in all (every type's together): what a process holds
	// of it, and what GET /event-types and its OpenAPI document answer, both served from that copy.
	MaxCatalogBytes = 4 << 20
)

// catalogDocumentName is the name the catalog's OpenAPI document is served under (GET
// /event-types/openapi.json): no type may take it.
const catalogDocumentName = "openapi.json"

// eventTypeCacheTTL bounds how long a process uses the catalog it read: a change made by any replica is
// enforced by every replica's Dispatch within this time (at once by the replica that made it).
const eventTypeCacheTTL = subscriberCacheTTL

// EventTypeRepo is the catalog of event types, stored in Redis: what subscribers may expect of each
// type, and the JSON Schema Dispatch and Enqueue hold each event's data to. The catalog is one for
// every tenant, written by the operator (this repo, Handler); tenants read it (Portal). A change is
// seen at once by the Dispatcher that made it and within eventTypeCacheTTL (1s) by every other.
type EventTypeRepo struct {
	rdb   redis.UniversalClient
	keys  rdb.Keys
	cache *eventtypes.Cache
}

// Create adds a type to the catalog. Its name must be a valid event type, its schema must compile
// (JSON Schema 2020-12 unless its $schema names another draft, no reference to another document) and
// every example must satisfy it; else the error wraps ErrInvalidEventType. A name the catalog holds
// wraps ErrEventTypeExists.
func (r *EventTypeRepo) Create(ctx context.Context, t EventType) (*EventType, error) {
	raw, err := r.check(ctx, &t)
	if err != nil {
		return nil, err
	}
	switch err := r.save(ctx, t.Name, "", raw); {
	case errors.Is(err, ErrConflict):
		return nil, fmt.Errorf("%w: %q", ErrEventTypeExists, t.Name)
	case err != nil:
		return nil, err
	}
	return &t, nil
}

// Get returns a type of the catalog, read from Redis, or an error wrapping ErrNotFound.
func (r *EventTypeRepo) Get(ctx context.Context, name string) (*EventType, error) {
	t, _, err := r.load(ctx, name)
	return t, err
}

// List returns the catalog, read from Redis, sorted by name. A type whose stored JSON cannot be
// decoded is left out.
func (r *EventTypeRepo) List(ctx context.Context) ([]*EventType, error) {
	all, err := rdb.ReadEventTypes(ctx, r.rdb, r.keys)
	if err != nil {
		return nil, fmt.Errorf("webhooks: list event types: %w", err)
	}
	out := make([]*EventType, 0, len(all))
	for _, raw := range all {
		var t EventType
		if json.Unmarshal([]byte(raw), &t) == nil {
			out = append(out, &t)
		}
	}
	slices.SortFunc(out, func(a, b *EventType) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Update replaces a type of the catalog (found by t.Name) with t, checked as Create checks it. An
// unknown name wraps ErrNotFound.
func (r *EventTypeRepo) Update(ctx context.Context, t EventType) (*EventType, error) {
	return r.modify(ctx, t.Name, func(cur *EventType) error {
		*cur = t
		return nil
	})
}

// Delete removes a type from the catalog: its events are no longer validated (and are refused under
// Options.RequireEventTypes). An unknown name wraps ErrNotFound.
func (r *EventTypeRepo) Delete(ctx context.Context, name string) error {
	for range maxSaveTries {
		_, raw, err := r.load(ctx, name)
		if err != nil {
			return err
		}
		if err := r.save(ctx, name, raw, ""); !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("webhooks: delete event type %s: %w", name, ErrConflict)
}

// modify is a read-modify-write of one type, tried again when another writer changed it meanwhile.
func (r *EventTypeRepo) modify(ctx context.Context, name string, change func(*EventType) error) (*EventType, error) {
	for range maxSaveTries {
		cur, old, err := r.load(ctx, name)
		if err != nil {
			return nil, err
		}
		if err := change(cur); err != nil {
			return nil, err
		}
		cur.Name = name
		raw, err := r.check(ctx, cur)
		if err != nil {
			return nil, err
		}
		if err := r.save(ctx, name, old, raw); !errors.Is(err, ErrConflict) {
			if err != nil {
				return nil, err
			}
			return cur, nil
		}
	}
	return nil, fmt.Errorf("webhooks: update event type %s: %w", name, ErrConflict)
}

// load reads one type and its stored JSON.
func (r *EventTypeRepo) load(ctx context.Context, name string) (*EventType, string, error) {
	raw, found, err := rdb.ReadEventType(ctx, r.rdb, r.keys, name)
	if err != nil {
		return nil, "", fmt.Errorf("webhooks: load event type %s: %w", name, err)
	}
	if !found {
		return nil, "", fmt.Errorf("%w: event type %q", ErrNotFound, name)
	}
	var t EventType
	if err := json.Unmarshal([]byte(raw), &t); err != nil {
		return nil, "", fmt.Errorf("webhooks: decode event type %s: %w", name, err)
	}
	return &t, raw, nil
}

// save writes a type's JSON (raw, "" to delete) if the stored one is still old ("" for none), and
// makes this process's cache read the catalog again. A stored JSON other than old wraps ErrConflict.
func (r *EventTypeRepo) save(ctx context.Context, name, old, raw string) error {
	defer r.cache.Invalidate() // whatever the outcome: a write that timed out may have been applied
	res, err := rdb.WriteEventType(ctx, r.rdb, r.keys, name, old, raw, randomHex(8), MaxEventTypes, MaxCatalogBytes)
	switch {
	case err != nil:
		return fmt.Errorf("webhooks: save event type %s: %w", name, err)
	case res == rdb.SaveConflict:
		return fmt.Errorf("webhooks: event type %s changed meanwhile: %w", name, ErrConflict)
	case res == rdb.SaveOverQuota:
		return fmt.Errorf("%w: the catalog holds %d types, its most", ErrInvalidEventType, MaxEventTypes)
	case res == rdb.SaveOverSize:
		return fmt.Errorf("%w: the catalog's types would take more than MaxCatalogBytes (%d bytes of JSON) together: delete a type, or make its schema or examples smaller",
			ErrInvalidEventType, MaxCatalogBytes)
	}
	return nil
}

// check validates a type (normalizing what it may) and returns the JSON to store.
func (r *EventTypeRepo) check(ctx context.Context, t *EventType) (string, error) {
	if err := validateEventType(t.Name); err != nil {
		return "", inField("name", fmt.Errorf("%w: %w", ErrInvalidEventType, err))
	}
	if t.Name == catalogDocumentName {
		return "", inField("name", fmt.Errorf("%w: %q is the name of the catalog's document", ErrInvalidEventType, t.Name))
	}
	if len(t.Description) > maxDescriptionLen || !utf8.ValidString(t.Description) ||
		strings.IndexFunc(t.Description, isControlButSpace) >= 0 {
		return "", inField("description", fmt.Errorf("%w: description must be at most %d bytes of UTF-8 text without control characters",
			ErrInvalidEventType, maxDescriptionLen))
	}
	if len(t.Examples) > MaxEventTypeExamples {
		return "", inField("examples", fmt.Errorf("%w: more than %d examples", ErrInvalidEventType, MaxEventTypeExamples))
	}
	if types.IsJSONNull(t.Schema) {
		t.Schema = nil
	}
	var sch *schema.Schema
	if len(t.Schema) > 0 {
		var err error
		if sch, err = schema.Compile(t.Name, t.Schema); err != nil {
			return "", inField("schema", fmt.Errorf("%w: %w", ErrInvalidEventType, err))
		}
	}
	for i, ex := range t.Examples {
		if !json.Valid(ex) {
			return "", inField("examples", fmt.Errorf("%w: example %d is not JSON", ErrInvalidEventType, i))
		}
		if sch == nil {
			continue
		}
		if err := sch.Validate(ctx, ex); err != nil {
			if ctx.Err() != nil && !errors.Is(err, schema.ErrOverBudget) {
				return "", fmt.Errorf("webhooks: check example %d: %w", i, err)
			}
			return "", inField("examples", fmt.Errorf("%w: example %d: %w", ErrInvalidEventType, i, err))
		}
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return "", inField("schema", fmt.Errorf("%w: %w", ErrInvalidEventType, err))
	}
	if len(raw) > MaxEventTypeBytes {
		return "", fmt.Errorf("%w: the type's JSON is %d bytes, more than %d", ErrInvalidEventType, len(raw), MaxEventTypeBytes)
	}
	return string(raw), nil
}

// EventTypes returns the catalog of event types.
func (d *Dispatcher) EventTypes() *EventTypeRepo { return d.eventTypes }
