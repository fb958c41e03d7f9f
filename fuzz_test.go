package webhooks

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/smartdrop/webhooks/internal/filter"
)

// FuzzMatchPattern: matching never panics, and the registry index (patternsFor) selects exactly the
// patterns that match, so resolution through the index and matching agree.
func FuzzMatchPattern(f *testing.F) {
	for _, s := range [][2]string{{"pool.*", "pool.created"}, {"*", "a"}, {"pool.created", "pool.created"}, {"a.b.*", "a.b"}, {"a.*", "ab.c"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, eventType string) {
		got := matchPattern(pattern, eventType)
		if validatePattern(pattern) != nil || validateEventType(eventType) != nil {
			return
		}
		indexed := false
		for _, p := range patternsFor(eventType) {
			indexed = indexed || p == pattern
		}
		if got != indexed {
			t.Fatalf("matchPattern(%q, %q) = %t but the index says %t", pattern, eventType, got, indexed)
		}
	})
}

// FuzzEventValidation: validation never panics; what it accepts is within the documented rules, and
// every key built from an accepted id stays in its event's hash slot.
func FuzzEventValidation(f *testing.F) {
	for _, s := range [][2]string{{"pool.created", "evt-1"}, {"a", "{x}"}, {"a.b-c_d", "ünï:code}{"}, {"a..b", "x"}, {"a", "\x00"}} {
		f.Add(s[0], s[1])
	}
	keys := newKeyspace("fuzz")
	f.Fuzz(func(t *testing.T, eventType, id string) {
		err := validateEvent(Event{Type: eventType, ID: id})
		if err != nil {
			return
		}
		if len(eventType) == 0 || len(eventType) > MaxEventTypeLen || len(id) == 0 || len(id) > MaxEventIDLen {
			t.Fatalf("accepted out-of-bounds type %q or id %q", eventType, id)
		}
		if !utf8.ValidString(id) || strings.ContainsAny(id, "\x00\n\r\t") {
			t.Fatalf("accepted id %q", id)
		}
		s := shardOf(id)
		if s < 0 || s >= shardCount {
			t.Fatalf("shard %d out of range", s)
		}
		did := deliveryIDFor("wh_1", id)
		if got, err := shardOfDelivery(did); err != nil || got != s {
			t.Fatalf("delivery id %q encodes shard %d (%v), want %d", did, got, err, s)
		}
		slot := keySlot(keys.Ready(s))
		for _, k := range []string{keys.Event(s, id), keys.Delivery(s, did), keys.Index(s, "wh_1"), keys.Queue(s, "wh_1")} {
			if keySlot(k) != slot {
				t.Fatalf("key %q left its event's slot", k)
			}
		}
	})
}

// FuzzFilter: Create's filter check (parseFilter) never panics, refuses only with ErrInvalidWebhook,
// and a webhook with an accepted filter matches any event without panicking. The language itself is
// fuzzed in internal/filter (FuzzFilter there also bounds the work of a match).
func FuzzFilter(f *testing.F) {
	for _, s := range [][3]string{
		{`{"type": "pool.created"}`, "pool.created", `{}`},
		{`{"data.tags": {"$in": ["a", 1.5, null, {"k": [true]}]}}`, "a", `{"tags": ["a", [1]]}`},
		{`{"data.x": {"$regex": "a"}}`, "a", `{`},
		{`{"$or": [{"type": {"$neq": "a"}}, {"$not": {"data.x": {"$exist": false}}}]}`, "a", `{"x": null}`},
	} {
		f.Add([]byte(s[0]), s[1], []byte(s[2]))
	}
	f.Fuzz(func(t *testing.T, raw []byte, eventType string, data []byte) {
		flt, err := parseFilter(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidWebhook) || flt != nil {
				t.Fatalf("parseFilter(%q) = %v, %v: want nil and an error wrapping ErrInvalidWebhook", raw, flt, err)
			}
			return
		}
		s := &storedWebhook{Webhook: Webhook{Filter: compactFilter(raw)}}
		filterMatches(s, filter.NewDocument(eventType, data))
	})
}
