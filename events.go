package webhooks

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on what an Event may carry.
const (
	// MaxEventTypeLen is the longest event type, in bytes.
	MaxEventTypeLen = 256
	// MaxEventIDLen is the longest event id, in bytes.
	MaxEventIDLen = 256
	// MaxOrderKeyLen is the longest Event.OrderKey, in bytes.
	MaxOrderKeyLen = 256
)

// TestEventType is the type of the event SendTest sends.
const TestEventType = "webhook.test"

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
	Data   any
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

// validateEventType reports whether t is 1–256 bytes of `[A-Za-z0-9_-]+` segments separated by dots.
func validateEventType(t string) error {
	if len(t) == 0 || len(t) > MaxEventTypeLen {
		return fmt.Errorf("%w: type must be 1-%d bytes", ErrInvalidEvent, MaxEventTypeLen)
	}
	for _, seg := range strings.Split(t, ".") {
		if seg == "" || !isNameSegment(seg) {
			return fmt.Errorf("%w: type %q must be [A-Za-z0-9_-] segments separated by '.'", ErrInvalidEvent, t)
		}
	}
	return nil
}

// validateEventID reports whether id is 1–256 bytes of printable UTF-8.
func validateEventID(id string) error { return validatePrintable("id", id, MaxEventIDLen) }

// validatePrintable reports whether s (an event's field, named what) is 1–maxLen bytes of printable
// UTF-8.
func validatePrintable(what, s string, maxLen int) error {
	if len(s) == 0 || len(s) > maxLen {
		return fmt.Errorf("%w: %s must be 1-%d bytes", ErrInvalidEvent, what, maxLen)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidEvent, what)
	}
	for _, r := range s {
		if unicode.IsControl(r) || !unicode.IsPrint(r) && r != ' ' {
			return fmt.Errorf("%w: %s contains a control or unprintable character", ErrInvalidEvent, what)
		}
	}
	return nil
}

func (e Event) validate() error {
	if err := validateEventType(e.Type); err != nil {
		return err
	}
	if err := validateTenant(e.Tenant); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	if e.OrderKey != "" {
		if err := validatePrintable("order key", e.OrderKey, MaxOrderKeyLen); err != nil {
			return err
		}
	}
	return validateEventID(e.ID)
}

func isNameSegment(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// isNameByte reports whether c is in [A-Za-z0-9_-].
func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// validatePattern accepts a subscription pattern: an exact type (`pool.created`), a prefix wildcard
// (`pool.*`, matching every type under `pool.` at any depth) or `*` (every type).
func validatePattern(p string) error {
	if p == "*" {
		return nil
	}
	exact := strings.TrimSuffix(p, ".*")
	if err := validateEventType(exact); err != nil {
		return fmt.Errorf("%w: subscription %q must be a type, a type prefix followed by .*, or *", ErrInvalidWebhook, p)
	}
	return nil
}

// matchPattern reports whether a subscription pattern selects an event type.
func matchPattern(pattern, eventType string) bool {
	if pattern == "*" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, ".*"); ok {
		return strings.HasPrefix(eventType, prefix+".")
	}
	return pattern == eventType
}

// patternsFor lists every subscription pattern that selects eventType: the type itself, each of its
// prefixes followed by `.*`, and `*`. Resolving subscribers reads these few index entries, so its cost
// does not grow with the number of registered webhooks.
func patternsFor(eventType string) []string {
	out := []string{eventType}
	for i := len(eventType) - 1; i > 0; i-- {
		if eventType[i] == '.' {
			out = append(out, eventType[:i]+".*")
		}
	}
	return append(out, "*")
}
