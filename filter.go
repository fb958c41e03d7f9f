package webhooks

// Webhook filters: the language is internal/filter; the root checks a webhook's filter when it is
// saved (parseFilter), keeps filters compiled (compiledFilter) and matches them against an event's
// filter.Document, which decodes the event's data once for all its webhooks.

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/smartdrop/webhooks/internal/filter"
)

// parseFilter checks and compiles a webhook's filter (nil for none); a filter that is not
// acceptable is refused with an error wrapping ErrInvalidWebhook that names where the problem is.
func parseFilter(raw json.RawMessage) (*filter.Filter, error) {
	f, err := filter.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidWebhook, err)
	}
	return f, nil
}

// filterMatches reports whether the webhook's filter selects the event doc (nil for a webhook without
// filter).
func filterMatches(s *storedWebhook, doc *filter.Document) bool {
	if len(s.Filter) == 0 {
		return true
	}
	f, ok := compiledFilter(s.Filter)
	return ok && f.Match(doc)
}

// compiledFilters keeps filters compiled, by their stored JSON; bounded.
var compiledFilters struct {
	sync.Mutex
	m map[string]*filter.Filter // nil value: the filter does not parse
}

// compiledFilter returns a stored filter compiled, and false for one that no longer parses (filters
// are validated when saved): such a webhook matches nothing.
func compiledFilter(raw json.RawMessage) (*filter.Filter, bool) {
	compiledFilters.Lock()
	defer compiledFilters.Unlock()
	if f, ok := compiledFilters.m[string(raw)]; ok {
		return f, f != nil
	}
	f, err := filter.Parse(raw)
	if err != nil {
		f = nil
	}
	if compiledFilters.m == nil || len(compiledFilters.m) >= 1024 {
		compiledFilters.m = map[string]*filter.Filter{}
	}
	compiledFilters.m[string(raw)] = f
	return f, f != nil
}
