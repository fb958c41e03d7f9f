package webhooks

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/smartdrop/webhooks/internal/types"
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
const TestEventType = types.TestEventType

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

// validateEvent checks an event's type, tenant, order key and id.
func validateEvent(e Event) error {
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
