package types

// Every sentinel error of the package. Calls wrap them with %w and context; test with errors.Is.

import (
	"errors"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/egress"
	"github.com/smartdrop/webhooks/verify"
)

// ErrInvalidQuery is returned (wrapped) by DeliveryRepo.Page and Dispatcher.Recover for arguments that
// cannot be used: an unknown status, a negative limit, an empty time window, a malformed cursor.
var ErrInvalidQuery = errors.New("webhooks: invalid query")

// ErrInvalidCursor is returned (wrapped) by DeliveryRepo.Page for a cursor it did not issue. It wraps
// ErrInvalidQuery.
var ErrInvalidCursor = fmt.Errorf("%w: invalid cursor", ErrInvalidQuery)

// ErrCorruptRecord is reported (wrapped) for a delivery record that cannot be decoded; the worker
// takes such a record off the schedule and goes on with the others.
var ErrCorruptRecord = errors.New("webhooks: corrupt delivery record")

// ErrDeferred is the Result.Err (wrapped) of a delivery that is recorded and scheduled but whose
// attempt this call did not make or could not record: its context ended, its claim's reply came too
// late to attempt within the lease, or Redis failed while the outcome was being written. A worker
// attempts it (again) once its lease expires; Result.Delivery is set, and the pair is accepted.
var ErrDeferred = errors.New("webhooks: attempt deferred to the worker")

// ErrLeaseLost is the error (wrapped) of an outcome that could not be recorded because another attempt took over the
// delivery after this one's lease expired.
var ErrLeaseLost = errors.New("webhooks: lease lost: a newer attempt owns the delivery")

// ErrBlockedAddress is returned (wrapped) when a webhook URL names, or a delivery attempt would connect
// to, an address the egress guard refuses: loopback, private, link-local (cloud metadata), multicast,
// reserved and similar non-public ranges. Options.AllowedNetworks and Options.AllowPrivateNetworks
// relax the guard.
var ErrBlockedAddress = egress.ErrBlocked

// ErrReplayIndexOff is returned (wrapped) by Dispatcher.ReplayMissing when Options.ReplayIndex is off.
var ErrReplayIndexOff = errors.New("webhooks: replay needs Options.ReplayIndex")

// ErrSecretKey is returned (wrapped) for a webhook whose secrets or credentials are sealed under a key
// that Options.SecretKeys does not hold (or sealed while it is empty), or that do not authenticate:
// WebhookRepo.Get and the calls that change the webhook fail with it, and its deliveries are not
// attempted (their attempts fail with it, sending nothing) until the key is configured.
var ErrSecretKey = errors.New("webhooks: secret key missing or wrong")

// ErrInvalidOptions is returned (wrapped) when Options cannot be used as given.
var ErrInvalidOptions = errors.New("webhooks: invalid options")

// ErrInvalidEvent is returned (wrapped) by Dispatch for an event that fails validation or cannot be
// encoded; nothing is claimed for it.
var ErrInvalidEvent = errors.New("webhooks: invalid event")

// ErrEventConflict is returned (wrapped, with ErrInvalidEvent) by Dispatch and Enqueue for an event
// whose (tenant, id) names an event accepted before with another type or data: an event id is one
// event. Nothing is claimed for it; the stored event is not delivered in its place.
var ErrEventConflict = errors.New("webhooks: event id names another event")

// ErrInvalidWebhook is returned (wrapped) for a webhook whose URL or subscriptions are not acceptable.
var ErrInvalidWebhook = errors.New("webhooks: invalid webhook")

// ErrInvalidEventType is returned (wrapped) by EventTypeRepo for an event type that cannot be stored: a
// malformed name, a schema that does not compile (or refers to another document), an example that
// fails its schema, or a type over the catalog's bounds.
var ErrInvalidEventType = errors.New("webhooks: invalid event type")

// ErrEventTypeExists is returned (wrapped) by EventTypeRepo.Create for a name the catalog holds.
var ErrEventTypeExists = errors.New("webhooks: event type exists")

// ErrOrderKeyConflict is returned (wrapped, beside ErrNotAccepted) by Dispatch and Enqueue for an
// event whose id was first accepted with another Event.OrderKey (or none, or one where this call has
// none): an event id keeps the order key it was first dispatched with, and nothing is claimed.
var ErrOrderKeyConflict = errors.New("webhooks: event id was dispatched with another order key")

// ErrNotFound is returned (wrapped) by every call that takes an id the library does not know.
var ErrNotFound = errors.New("webhooks: not found")

// ErrInvalidSignature is returned by Verify when no entry of the webhook-signature header of the
// key's scheme (v1 for a "whsec_" secret, v1a for a "whpk_" public key) matches the request. It is
// verify.ErrInvalidSignature, as the next two are verify's, so errors.Is matches either name.
var ErrInvalidSignature = verify.ErrInvalidSignature

// ErrInvalidTimestamp is returned by Verify when the webhook-timestamp header is not a canonical
// decimal number of seconds (no sign, no leading zero, no space) or is further than VerifyTolerance
// from the current time.
var ErrInvalidTimestamp = verify.ErrInvalidTimestamp

// ErrMissingHeaders is returned by Verify when webhook-id, webhook-timestamp
// or webhook-signature is absent or empty.
var ErrMissingHeaders = verify.ErrMissingHeaders

// ErrWebhookDisabled is returned (wrapped) by Redeliver for a delivery whose webhook is disabled:
// enable the webhook (Update) first.
var ErrWebhookDisabled = errors.New("webhooks: webhook disabled")

// ErrConflict is returned (wrapped) by WebhookRepo.Update, Delete and RotateSecret when the webhook
// kept changing under the call (another replica changed it between its read and its write, eight
// times in a row): nothing was written; read it again and retry.
var ErrConflict = errors.New("webhooks: concurrent update, try again")

// ErrNotAccepted is returned (wrapped, with each failed target's cause joined) by Dispatch, Enqueue and
// SendTest when at least one target's delivery could not be claimed (Redis unreachable, a script
// error, the context ended before the claim): those pairs are not recorded and nothing will deliver
// them unless the caller dispatches the event again, which is safe, since the pairs that were claimed
// come back as duplicates. The []Result returned with it still tells which targets were accepted.
var ErrNotAccepted = errors.New("webhooks: event not accepted")

// ErrInvalidToken is returned (wrapped) for a portal token that is missing, malformed, signed with
// another key, tampered with or expired.
var ErrInvalidToken = errors.New("webhooks: invalid portal token")

// ErrTenantQuota is returned (wrapped) by Create for a webhook whose tenant already has
// Options.MaxWebhooksPerTenant webhooks.
var ErrTenantQuota = errors.New("webhooks: tenant has too many webhooks")

// ErrNotRetryable is returned (wrapped) by Dispatcher.RetryNow for a delivery that cannot be made due
// now: it is not pending (Redeliver sends a final one again), an attempt is in flight, it waits behind
// an earlier delivery of its order key, or its webhook's circuit is open (the next try is a probe).
var ErrNotRetryable = errors.New("webhooks: the delivery cannot be retried now")

// ErrProbeRefused is returned (wrapped) by Dispatcher.ProbeNow for a webhook whose circuit is closed,
// or whose probe is already in flight.
var ErrProbeRefused = errors.New("webhooks: no probe now")

// ErrTestSendsLimited is returned (wrapped) by Dispatcher.SendTest when the webhook, or its tenant, has
// taken its test sends for the second; nothing is claimed.
var ErrTestSendsLimited = errors.New("webhooks: too many test sends")

// ErrActionsLimited is returned (wrapped, in a *Limited) by Dispatcher.Redeliver, RetryNow and ProbeNow
// when the webhook, or its tenant, has taken its resends, retries or tries now for the second; nothing
// is done.
var ErrActionsLimited = errors.New("webhooks: too many requests")

// Limited is the refusal of a rate-limited action (test sends, resends, retries, tries now): its words,
// which wrap the action's sentinel and say when to try again, and that delay, which the admin API
// sends as Retry-After.
type Limited struct {
	Err  error
	Wait time.Duration
}

func (e *Limited) Error() string { return e.Err.Error() }
func (e *Limited) Unwrap() error { return e.Err }

// RetryAfter is how long until the action would be granted.
func (e *Limited) RetryAfter() time.Duration { return e.Wait }

// ErrPayloadExpired is returned (wrapped) by Redeliver (and answered 409 payload_expired by the admin
// API) for a delivery whose event's payload is no longer stored: Options.PayloadRetention dropped it
// (or Redis evicted it). Nothing is written; the record keeps its attempts until Options.Retention.
// Dispatch the event again to send it.
var ErrPayloadExpired = errors.New("webhooks: payload expired")
