package webhooks

// The webhook's one codec. A Webhook's JSON (its struct tags) is what the registry stores, what the
// admin API and the portal send and take, and what the web UI shows: a new field is a field of
// Webhook, its check in validate, and a test. What the API may not read or set is said here once:
// server-set fields (serverSetFields), fields a PATCH keeps (keptFields), credentials withheld
// (apiView).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/smartdrop/webhooks/internal/sealed"
	"github.com/smartdrop/webhooks/internal/types"
)

// storedWebhook is a webhook as the registry stores it: its JSON, and the secret it is rotating away
// from.
type storedWebhook struct {
	Webhook
	// PrevSecret still signs requests, beside Secret, until PrevUntil (ms): secret rotation.
	PrevSecret string `json:"ps,omitempty"`
	PrevUntil  int64  `json:"pu,omitempty"`
	// unsealed is set when a sealed field could not be opened (ErrSecretKey): the field is then "",
	// and the webhook is neither attempted nor changed until the key is configured.
	unsealed error
}

// sealedFields are the stored webhook's fields sealed at rest when Options.SecretKeys is set, each
// with the name its associated data binds it to (with the webhook's id).
func (s *storedWebhook) sealedFields() map[string]*string {
	f := map[string]*string{"secret": &s.Secret, "ps": &s.PrevSecret}
	if a := s.Auth; a != nil {
		f["auth.bearer"] = &a.Bearer
		if a.Basic != nil {
			f["auth.basic.password"] = &a.Basic.Password
		}
		if a.OAuth2 != nil {
			f["auth.oauth2.client_secret"] = &a.OAuth2.ClientSecret
		}
		if a.TLSClientCert != nil {
			f["auth.tls_client_cert.key"] = &a.TLSClientCert.Key
		}
	}
	return f
}

// sealedHeader is the name a custom header's value is sealed under (its value is a credential as much
// as Auth's: the API never returns it).
func sealedHeader(name string) string { return "headers." + name }

// sealedAAD binds a sealed field to its webhook and name.
func sealedAAD(id, field string) string { return "webhook/" + id + "/" + field }

// open replaces s's sealed fields by their clear values; a field it cannot open is left "" and
// recorded in s.unsealed.
func (s *storedWebhook) open(ring *sealed.Ring) {
	for name, f := range s.sealedFields() {
		v, err := ring.Open(*f, sealedAAD(s.ID, name))
		if err != nil {
			s.unsealed = fmt.Errorf("%w: webhook %s, field %s: %w", ErrSecretKey, s.ID, name, err)
			v = ""
		}
		*f = v
	}
	for name, sealedValue := range s.Headers {
		v, err := ring.Open(sealedValue, sealedAAD(s.ID, sealedHeader(name)))
		if err != nil {
			s.unsealed = fmt.Errorf("%w: webhook %s, header %s: %w", ErrSecretKey, s.ID, name, err)
			v = ""
		}
		s.Headers[name] = v
	}
}

// sealedCopy is s with its sealed fields sealed under ring's first key (s itself unchanged).
func (s *storedWebhook) sealedCopy(ring *sealed.Ring) (*storedWebhook, error) {
	c := *s
	c.Auth = types.CloneAuth(s.Auth)
	for name, f := range c.sealedFields() {
		v, err := ring.Seal(*f, sealedAAD(c.ID, name))
		if err != nil {
			return nil, fmt.Errorf("webhooks: seal webhook %s: %w", c.ID, err)
		}
		*f = v
	}
	if s.Headers != nil {
		c.Headers = make(map[string]string, len(s.Headers))
		for name, clear := range s.Headers {
			v, err := ring.Seal(clear, sealedAAD(c.ID, sealedHeader(name)))
			if err != nil {
				return nil, fmt.Errorf("webhooks: seal webhook %s: %w", c.ID, err)
			}
			c.Headers[name] = v
		}
	}
	return &c, nil
}

// decodeStored decodes a webhook as the registry stores it, its sealed fields opened with ring.
func decodeStored(raw string, ring *sealed.Ring) (*storedWebhook, error) {
	var s storedWebhook
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return nil, err
	}
	s.open(ring)
	return &s, nil
}

// normalizeWebhook puts a webhook in its stored form: times to the millisecond in UTC, patterns without
// duplicates, canonical header names, a compact filter; PublicKey and Asymmetric are not stored (one
// follows from the secret, the other only asks Create for a kind of key).
func normalizeWebhook(w *Webhook) {
	w.CreatedAt, w.UpdatedAt = w.CreatedAt.UTC().Truncate(time.Millisecond), w.UpdatedAt.UTC().Truncate(time.Millisecond)
	w.DisabledAt = w.DisabledAt.UTC().Truncate(time.Millisecond)
	w.Events, w.Headers, w.Filter = compactPatterns(w.Events), canonicalHeaders(w.Headers), compactFilter(w.Filter)
	w.PublicKey, w.Asymmetric = "", false
	if w.Auth != nil && len(types.AuthKinds(w.Auth)) > 0 {
		w.Auth.Type, w.Auth.Set = "", false
	}
}

// webhook is the stored webhook as callers see it, sharing nothing with s, with its PublicKey.
func (s *storedWebhook) webhook() *Webhook {
	w := s.Webhook
	w.Events, w.Headers, w.Filter = slices.Clone(s.Events), maps.Clone(s.Headers), slices.Clone(s.Filter)
	w.Auth = types.CloneAuth(s.Auth)
	if pk, err := PublicKey(s.Secret); err == nil {
		w.PublicKey = pk
	}
	return &w
}

// encode is a stored webhook's JSON, its sealed fields sealed with ring, with '<', '>' and '&' as
// they are (not escaped six-fold).
func (s *storedWebhook) encode(ring *sealed.Ring) ([]byte, error) {
	if ring.Enabled() {
		var err error
		if s, err = s.sealedCopy(ring); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("webhooks: encode webhook: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON decodes a stored webhook, in the form this build writes or the one of builds before it
// (legacyStoredWebhook).
func (s *storedWebhook) UnmarshalJSON(b []byte) error {
	type plain storedWebhook // the same fields without this method
	if err := json.Unmarshal(b, (*plain)(s)); err != nil {
		return err
	}
	if !s.CreatedAt.IsZero() {
		return nil
	}
	var l legacyStoredWebhook
	if err := json.Unmarshal(b, &l); err != nil {
		return err
	}
	s.Tenant, s.Description, s.Disabled, s.RateLimit, s.Headers, s.Filter = l.Tenant, l.Description, l.Disabled,
		l.RateLimit, l.Headers, l.Filter
	s.CreatedAt, s.UpdatedAt = time.UnixMilli(l.Created).UTC(), time.UnixMilli(l.Updated).UTC()
	return nil
}

// legacyStoredWebhook is the short names of the fields that builds before the one codec stored
// under other names than Webhook's; frozen (a webhook is written in the new form when next saved).
type legacyStoredWebhook struct {
	Tenant      string            `json:"t"`
	Description string            `json:"desc"`
	Disabled    bool              `json:"off"`
	RateLimit   int               `json:"rl"`
	Headers     map[string]string `json:"h"`
	Filter      json.RawMessage   `json:"f"`
	Created     int64             `json:"c"`
	Updated     int64             `json:"u"`
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
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return slices.Clone(raw)
	}
	return b.Bytes()
}
