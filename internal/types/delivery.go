package types

import (
	"encoding/json"
	"time"
)

// A delivery of one event to one webhook, its attempts, and the result of dispatching it.

// Status is the state of a delivery.
type Status string

// The states of a delivery. A pending delivery has an attempt due or in flight; success and failed are
// final until Redeliver resets a failed one. Skipped is final too: its webhook's transformation gave
// null for the event, so nothing was sent (Webhook.Transform).
const (
	StatusPending Status = "pending"
	StatusSuccess Status = "success"
	StatusFailed  Status = "failed"
	StatusSkipped Status = "skipped"
)

// The LastError of a due delivery the worker fails without attempting it (the admin API says it in
// words: api.ViewDelivery).
const (
	NotAttemptedWebhookDeleted  = "webhook deleted: not attempted"
	NotAttemptedWebhookDisabled = "webhook disabled: not attempted"
	NotAttemptedBodyExpired     = "event body expired: not attempted"
)

// PayloadExpiry is when the payload of a delivery created at created expires under a payload
// retention of keep (Options.PayloadRetention): created + keep, the earliest its event's body can go
// (a later Dispatch of the same event that creates another delivery keeps the body longer); zero for
// keep 0, a body kept as long as its records.
func PayloadExpiry(created time.Time, keep time.Duration) time.Time {
	if keep <= 0 || created.IsZero() {
		return time.Time{}
	}
	return created.Add(keep)
}

// PayloadExpired says in words that a delivery's payload expired at at (PayloadExpiry): "payload
// expired on 2026-12-03 12:40:05 (UTC)", or "payload expired" when at is zero (a body gone before its
// record without a payload retention: evicted).
func PayloadExpired(at time.Time) string {
	if at.IsZero() {
		return "payload expired"
	}
	return "payload expired on " + at.UTC().Format(time.DateTime) + " (UTC)"
}

// Delivery is one (webhook, event) pair's delivery: every attempt to send that event to that webhook.
type Delivery struct {
	ID             string    `json:"id"`
	WebhookID      string    `json:"webhook_id"`
	EventID        string    `json:"event_id"`
	EventType      string    `json:"event_type"`
	Status         Status    `json:"status"`
	Attempts       int       `json:"attempts"`
	NextAttemptAt  time.Time `json:"next_attempt_at,omitzero"`
	LastStatusCode int       `json:"last_status_code,omitempty"`
	LastError      string    `json:"last_error,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	// ExpiresAt is when the record and its claim expire (Options.Retention after creation or the last
	// Redeliver).
	ExpiresAt time.Time `json:"expires_at"`
	// History holds the most recent attempts, oldest first (at most 10).
	History []Attempt `json:"history,omitempty"`
	// OrderKey is the event's Event.OrderKey ("" for an unordered event): deliveries of one webhook
	// with the same key are attempted one at a time, in the order their events were accepted. A
	// pending ordered delivery waiting behind earlier ones has a zero NextAttemptAt;
	// DeliveryRepo.Position says how many are ahead of it.
	OrderKey string `json:"order_key,omitempty"`
}

// Attempt is one HTTP attempt of a delivery.
type Attempt struct {
	At time.Time `json:"at"`
	// Duration is how long the attempt took; in JSON "duration_ms", milliseconds with microseconds as
	// a fraction.
	Duration   time.Duration `json:"-"`
	StatusCode int           `json:"status_code,omitempty"`
	Error      string        `json:"error,omitempty"`
	// Response is the start of the response body (at most 1 KiB).
	Response string `json:"response,omitempty"`
}

// Result is the outcome of a Dispatch (or Enqueue) for one subscribed webhook.
//
// The contract: a Result whose pair is recorded (sent, scheduled, or a duplicate) has a non-nil
// Delivery. Its Err, if any, wraps ErrDeferred (recorded and scheduled, but this call's attempt was
// not made or its outcome not written: a worker makes it), ErrLeaseLost or ErrCorruptRecord; the
// pair is accepted all the same. A Result whose pair could not be claimed has a nil Delivery and an
// Err saying why, and the call that returned it also returned an error wrapping ErrNotAccepted. An
// HTTP failure is not an error here but a pending Delivery with LastError and NextAttemptAt.
type Result struct {
	WebhookID string
	// Delivery is the pair's delivery: as this call's first attempt left it when the call created
	// it, or the existing record when Duplicate is set; nil only when the pair was not accepted.
	Delivery *Delivery
	// Duplicate is set when the pair had been dispatched before: nothing was sent.
	Duplicate bool
	// Err is this target's own problem; see the type's doc for what it means for the pair.
	Err error
}

// Accepted reports whether the pair is durably recorded: sent, scheduled or a duplicate.
func (r Result) Accepted() bool { return r.Delivery != nil }

// attemptJSON is Attempt as JSON: its duration as a number of milliseconds named so.
type attemptJSON struct {
	plainAttempt
	DurationMs float64 `json:"duration_ms"`
}

type plainAttempt Attempt // Attempt's fields without its methods

// MarshalJSON writes a with Duration as "duration_ms".
func (a Attempt) MarshalJSON() ([]byte, error) {
	return json.Marshal(attemptJSON{plainAttempt(a), float64(a.Duration.Microseconds()) / 1000})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (a *Attempt) UnmarshalJSON(b []byte) error {
	var j attemptJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*a = Attempt(j.plainAttempt)
	a.Duration = time.Duration(j.DurationMs * float64(time.Millisecond))
	return nil
}
