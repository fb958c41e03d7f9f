package webhooks

// A webhook's stored form: the registry's record (internal/rdb's WebhookRecord) and how Create and
// Update normalize a webhook before it is validated and stored.

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"

	"github.com/smartdrop/webhooks/internal/endpoint"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// storedWebhook is a webhook as the registry stores it: its record (rdb.WebhookRecord, the codec of
// the stored form, sealing included), under the name the engine's code knows it by.
type storedWebhook = rdb.WebhookRecord

// normalizeWebhook puts a webhook in its stored form: times to the millisecond in UTC, patterns without
// duplicates, canonical header names, a compact filter; PublicKey and Asymmetric are not stored (one
// follows from the secret, the other only asks Create for a kind of key).
func normalizeWebhook(w *Webhook) {
	w.CreatedAt, w.UpdatedAt = w.CreatedAt.UTC().Truncate(time.Millisecond), w.UpdatedAt.UTC().Truncate(time.Millisecond)
	w.DisabledAt = w.DisabledAt.UTC().Truncate(time.Millisecond)
	w.Events, w.Headers, w.Filter = compactPatterns(w.Events), endpoint.CanonicalHeaders(w.Headers), compactFilter(w.Filter)
	w.PublicKey, w.Asymmetric = "", false
	if w.Auth != nil && len(types.AuthKinds(w.Auth)) > 0 {
		w.Auth.Type, w.Auth.Set = "", false
	}
}

// compactPatterns drops duplicate patterns, keeping order.
func compactPatterns(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// compactFilter is a filter as stored: nil for none (empty or JSON null), otherwise compacted (a filter
// that is not JSON is kept as given, for validate to refuse).
func compactFilter(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 || types.IsJSONNull(raw) {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return slices.Clone(raw)
	}
	return b.Bytes()
}
