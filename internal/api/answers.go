package api

// The answers the Backend gives beyond the shared types, each with the JSON the routes send.

import (
	"encoding/json"
	"time"

	"github.com/smartdrop/webhooks/internal/types"
)

// DeliveryView is a delivery as the API answers it (ViewDelivery): a pending delivery's NextAttemptAt
// is when it may next be attempted, true to its webhook's state now. Why says, in words, why a
// pending delivery waits or why a failed one was never attempted; it is empty when the record says
// it all.
type DeliveryView struct {
	*types.Delivery
	Why string `json:"why,omitempty"`
}

// DeliveryPage is a page of a webhook's deliveries, newest first, without attempt history
// (GET /webhooks/{id}/deliveries); NextCursor is "" on the last page.
type DeliveryPage struct {
	Deliveries []DeliveryView `json:"deliveries"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

// DeliveryDetail is a delivery as GET /deliveries/{id} shows it: with when it was redelivered, as far
// as its webhook's index shows, and an ordered delivery's place in its key's sequence (0 for the head,
// -1 for none; nil when unordered or unread).
type DeliveryDetail struct {
	DeliveryView
	RedeliveredAt []time.Time `json:"redelivered_at,omitempty"`
	OrderPosition *int        `json:"order_position,omitempty"`
	PayloadGone
}

// PayloadGone says that a delivery's payload is no longer stored (Options.PayloadRetention): when
// (types.PayloadExpiry; absent when unknown) and in words (types.PayloadExpired). Both are absent
// while the payload is kept.
type PayloadGone struct {
	PayloadExpiredAt time.Time `json:"payload_expired_at,omitzero"`
	PayloadExpired   string    `json:"payload_expired,omitempty"`
}

// Gone is the PayloadGone of a payload that expired at at (zero: when is not known).
func Gone(at time.Time) PayloadGone {
	return PayloadGone{PayloadExpiredAt: at, PayloadExpired: types.PayloadExpired(at)}
}

// PayloadView is GET /deliveries/{id}/payload's answer: the body the delivery sends, or null with
// PayloadGone once it expired.
type PayloadView struct {
	Payload json.RawMessage `json:"payload"`
	// Transformed: Payload is the event as its webhook's transformation reshapes it now.
	Transformed bool `json:"transformed"`
	PayloadGone
}

// SearchPage is the answer of GET /deliveries.
type SearchPage struct {
	Deliveries []DeliveryView `json:"deliveries"`
	// NextCursor continues the search (as ?cursor=) after the last delivery examined; "" when none is
	// left.
	NextCursor string `json:"next_cursor,omitempty"`
	// Stopped says why the search stopped: "end", "limit" or "budget" (the root's SearchStopped*).
	Stopped string `json:"stopped"`
}

// OrderQueue is an ordered delivery's key's queue (GET /deliveries/{id}/queue).
type OrderQueue struct {
	OrderKey string `json:"order_key"`
	// Length is how many deliveries the key's sequence holds: the head (in flight, retrying, parked,
	// or failed and holding its key under Options.BlockKeyOnFailure) and those waiting behind it.
	Length int64 `json:"length"`
	// Deliveries are the first of them, head first, without attempt history (a record that expired
	// meanwhile is left out).
	Deliveries []*types.Delivery `json:"deliveries"`
}

// Where a request header's value comes from (RequestHeader.Source).
const (
	HeaderFixed    = "fixed"    // the same on every attempt, exactly what was sent
	HeaderAttempt  = "attempt"  // its own on each attempt, given for the latest one
	HeaderSigned   = "signed"   // computed on each attempt and not stored
	HeaderEndpoint = "endpoint" // the endpoint's headers and credentials now: write-only, never given
)

// RequestHeader is one header of a delivery's request. Value is set only for fixed and attempt
// headers.
type RequestHeader struct {
	Name   string `json:"name"`
	Value  string `json:"value,omitempty"`
	Source string `json:"source"`
}

// DeliveryRequest is a delivery's request as rebuilt (GET /deliveries/{id}/request). URL is the
// endpoint's URL now.
type DeliveryRequest struct {
	Method  string          `json:"method"`
	URL     string          `json:"url"`
	Headers []RequestHeader `json:"headers"`
}

// Counts are a webhook's delivery counts (GET /webhooks/{id}/counts).
type Counts struct {
	// Pending is how many deliveries are scheduled for an attempt (due, retrying, in flight or
	// parked), exactly: the entries of the webhook's queues. An ordered delivery waiting behind its
	// key's head is not scheduled yet, and not counted.
	Pending int64 `json:"pending"`
	// Parked is how many of them wait for the probe of the webhook's open circuit: due by the time
	// the circuit may next be probed. 0 while the circuit is closed, and for a disabled webhook.
	Parked int64 `json:"parked"`
	// Failed is how many of the Examined newest deliveries (in the listing's order, by creation or
	// last Redeliver) have failed for good; Waiting how many of them are ordered deliveries waiting
	// behind an earlier delivery of their order key (pending, not scheduled yet: not in Pending).
	Failed   int `json:"failed"`
	Waiting  int `json:"waiting"`
	Examined int `json:"examined"`
	// ReplayAvailable is whether POST /webhooks/{id}/replay can work: Options.ReplayIndex is on.
	ReplayAvailable bool `json:"replay_available"`
}

// Backlog is the delivery backlog of every tenant (GET /backlog): the root's Stats without the
// figures per shard, its age in milliseconds.
type Backlog struct {
	At           time.Time `json:"at"`
	Due          int64     `json:"due"`
	Scheduled    int64     `json:"scheduled"`
	Leased       int64     `json:"leased"`
	OldestDueAt  time.Time `json:"oldest_due_at,omitzero"`
	OldestDueAge int64     `json:"oldest_due_age_ms"`
	Webhooks     int64     `json:"webhooks"`
	OpenCircuits int       `json:"open_circuits"`
	// PausedEndpoints is how many of the webhooks with an open circuit are paused: those not disabled
	// (a disabled webhook keeps its circuit, but is disabled, not paused).
	PausedEndpoints int  `json:"paused_endpoints"`
	Truncated       bool `json:"truncated"`
	// Held are the webhooks whose due deliveries no worker will attempt now (counted in Due), and why.
	Held []HeldQueue `json:"held"`
}

// HeldQueue is a webhook whose due deliveries no worker will attempt now, and why.
type HeldQueue struct {
	WebhookID string `json:"webhook_id"`
	URL       string `json:"url"`
	// Due is how many of its deliveries are due now, in every shard.
	Due int64  `json:"due"`
	Why string `json:"why"` // "paused", "disabled" or "at_max_concurrency"
	// OpenUntil and Failures are its circuit's, when paused; DisabledReason why it is disabled;
	// MaxConcurrency its cap, when at it.
	OpenUntil      time.Time `json:"open_until,omitzero"`
	Failures       int       `json:"failures,omitempty"`
	DisabledReason string    `json:"disabled_reason,omitempty"`
	MaxConcurrency int       `json:"max_concurrency,omitempty"`
}

// ProbeAnswer is the answer of POST /webhooks/{id}/probe: the circuit after the probe was made due,
// and how many parked deliveries were made due with it.
type ProbeAnswer struct {
	Circuit       types.Health `json:"circuit"`
	DeliveriesDue int          `json:"deliveries_due"`
}
