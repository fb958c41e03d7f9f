package types

import "encoding/json"

// An entry of the catalog of event types.

// EventType is an entry of the catalog of event types: what subscribers may expect of the events of
// one type. The catalog is the operator's, one for every tenant; tenants read it.
type EventType struct {
	// Name is the event type, as Event.Type spells it (`pool.assets_locked`): [A-Za-z0-9_-] segments
	// separated by '.', at most MaxEventTypeLen bytes. Set at Create, never changed.
	Name string `json:"name"`
	// Description says what the event means, for subscribers (at most 1024 bytes of text).
	Description string `json:"description,omitempty"`
	// Schema is a JSON Schema (2020-12, or Draft 7 when its $schema says so) that the data of every
	// event of the type must satisfy: Dispatch and Enqueue refuse data that fails it. Empty: any data.
	// It may not refer to another document ($ref to a URL not within it).
	Schema json.RawMessage `json:"schema,omitempty"`
	// Examples are example data of the type, published in the catalog; each must satisfy Schema.
	Examples []json.RawMessage `json:"examples,omitempty"`
	// Deprecated marks a type that producers should stop sending: its events are still delivered, and
	// the catalog marks it.
	Deprecated bool `json:"deprecated,omitempty"`
}
