package webhooks

// The webhook's one codec. A Webhook's JSON (its struct tags) is what the registry stores, what the
// admin API and the portal send and take, and what the web UI shows: a new field is a field of
// Webhook, its check in validate, and a test. What the API may not read or set is said here once:
// server-set fields (serverSetFields), fields a PATCH keeps (keptFields), credentials withheld
// (apiView).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/smartdrop/webhooks/internal/endpoint"
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
	c.Auth = endpoint.Clone(s.Auth)
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
	w.Events, w.Headers, w.Filter = compactPatterns(w.Events), endpoint.CanonicalHeaders(w.Headers), compactFilter(w.Filter)
	w.PublicKey, w.Asymmetric = "", false
	if w.Auth != nil && len(types.AuthKinds(w.Auth)) > 0 {
		w.Auth.Type, w.Auth.Set = "", false
	}
}

// keepFields copies to w from cur the fields Update and PATCH never change: identity, tenant, secret and
// creation time.
func keepFields(w, cur *Webhook) {
	w.ID, w.Tenant, w.Secret, w.PublicKey, w.Asymmetric, w.CreatedAt = cur.ID, cur.Tenant, cur.Secret, cur.PublicKey,
		cur.Asymmetric, cur.CreatedAt
	w.UpdatedAt = cur.UpdatedAt
}

// serverSetFields names a field of a create request that only the server sets, or "".
func serverSetFields(w *Webhook) string {
	switch {
	case w.ID != "":
		return "id"
	case w.Secret != "" || w.PublicKey != "":
		return "secret" // made by Create; see rotate-secret
	case !w.CreatedAt.IsZero() || !w.UpdatedAt.IsZero():
		return "created_at and updated_at"
	}
	return ""
}

// webhook is the stored webhook as callers see it, sharing nothing with s, with its PublicKey.
func (s *storedWebhook) webhook() *Webhook {
	w := s.Webhook
	w.Events, w.Headers, w.Filter = slices.Clone(s.Events), maps.Clone(s.Headers), slices.Clone(s.Filter)
	w.Auth = endpoint.Clone(s.Auth)
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

// errBadRequest marks an admin API request the root cannot use: bad JSON, a field it may not set.
var errBadRequest = errors.New("invalid request")

// decodeWebhookJSON decodes one JSON object into w, refusing unknown fields and trailing data.
func decodeWebhookJSON(b []byte, w *Webhook) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(w); err != nil {
		return jsonBodyError(err)
	}
	if dec.More() {
		return fmt.Errorf("%w: malformed JSON body: more than one JSON value", errBadRequest)
	}
	return nil
}

// webhookFromCreate decodes the body of an API create: a Webhook's JSON without the server-set fields.
func webhookFromCreate(body []byte) (Webhook, error) {
	var w Webhook
	if err := decodeWebhookJSON(body, &w); err != nil {
		return w, err
	}
	if f := serverSetFields(&w); f != "" {
		return w, fmt.Errorf("%w: %s is set by the server", errBadRequest, f)
	}
	return w, nil
}

// applyPatch applies an API PATCH body to cur: each field present replaces cur's (null clears it),
// like a JSON merge patch of the webhook's JSON. A custom header given with the value "" keeps the
// value it has (so a webhook read from the API, whose header values are withheld, can be sent back).
// Fields PATCH does not change must be absent or equal to cur's.
//
// A PATCH that changes the URL takes no credential to the new URL that it does not give itself: the
// custom headers and Auth it does not name are dropped, and keeping one (a header sent back as "", the
// API's view of Auth sent back) is refused, since its value would go to a host the caller may control.
func applyPatch(cur *Webhook, patch []byte) (Webhook, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(patch, &fields); err != nil || fields == nil {
		return Webhook{}, fmt.Errorf("%w: the body must be a JSON object", errBadRequest)
	}
	merged, err := json.Marshal(cur)
	if err != nil {
		return Webhook{}, fmt.Errorf("webhooks: encode webhook: %w", err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(merged, &all); err != nil {
		return Webhook{}, fmt.Errorf("webhooks: decode webhook: %w", err)
	}
	maps.Copy(all, fields)
	if merged, err = json.Marshal(all); err != nil {
		return Webhook{}, fmt.Errorf("%w: %w", errBadRequest, err)
	}
	var next Webhook
	if err := decodeWebhookJSON(merged, &next); err != nil {
		return Webhook{}, err
	}
	kept := next
	keepFields(&kept, cur)
	if a, b := encodeWebhook(&kept), encodeWebhook(&next); !bytes.Equal(a, b) {
		return Webhook{}, fmt.Errorf("%w: PATCH does not change id, tenant, secret, public_key, asymmetric, created_at or updated_at",
			errBadRequest)
	}
	if kept.URL != cur.URL {
		if _, named := fields["auth"]; !named || endpoint.IsView(kept.Auth) {
			if named {
				return Webhook{}, inField("auth", fmt.Errorf("%w: auth: the URL changes, so its credentials are not kept: give them again, or null",
					ErrInvalidWebhook))
			}
			kept.Auth = nil
		}
		if _, named := fields["headers"]; !named {
			kept.Headers = nil
		}
		for name, v := range kept.Headers {
			if v == "" {
				return Webhook{}, inField("headers", fmt.Errorf("%w: header %s: the URL changes, so its value is not kept: give it again, or leave the header out",
					ErrInvalidWebhook, name))
			}
		}
	}
	if endpoint.IsView(kept.Auth) { // the API's view sent back: keep the credentials
		if endpoint.View(cur.Auth) == nil || *kept.Auth != *endpoint.View(cur.Auth) {
			return Webhook{}, fmt.Errorf("%w: auth: give the credentials of one method, or send back the webhook's own view of it",
				ErrInvalidWebhook)
		}
		kept.Auth = endpoint.Clone(cur.Auth)
	}
	for name, v := range kept.Headers {
		if v != "" {
			continue
		}
		old, ok := cur.Headers[http.CanonicalHeaderKey(name)]
		if !ok {
			return Webhook{}, fmt.Errorf("%w: header %s has no value to keep", ErrInvalidWebhook, name)
		}
		kept.Headers[name] = old
	}
	return kept, nil
}

// encodeWebhook is a webhook's JSON (nil if its filter is not JSON, which validate refuses).
func encodeWebhook(w *Webhook) []byte {
	b, _ := json.Marshal(w)
	return b
}

// apiView is a webhook as the admin API and the portal send it: custom header values withheld (each
// header present with the value ""), auth shown as its type and set, never its credentials, and the
// secret only when withSecret (create and rotate-secret).
func apiView(w *Webhook, withSecret bool) *Webhook {
	v := *w
	v.Auth = endpoint.View(w.Auth)
	if !withSecret {
		v.Secret = ""
	}
	if w.Headers != nil {
		v.Headers = make(map[string]string, len(w.Headers))
		for name := range w.Headers {
			v.Headers[name] = ""
		}
	}
	return &v
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

// jsonBodyError is a request body's decoding error in words for a person, naming the field when it is
// about one (no Go type or struct names): a field of the wrong type, an unknown field, or JSON that does
// not parse.
func jsonBodyError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return inField(typeErr.Field, fmt.Errorf("%w: %s must be %s, not a JSON %s", errBadRequest, typeErr.Field,
			jsonKind(typeErr.Type), typeErr.Value))
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("%w: the body is not valid JSON (at byte %d)", errBadRequest, syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Errorf("%w: the body is not valid JSON (it ends early)", errBadRequest)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return inField(name, fmt.Errorf("%w: %s is not a field of a webhook", errBadRequest, name))
	}
	return fmt.Errorf("%w: the body is not a JSON object of a webhook's fields", errBadRequest)
}

// jsonKind names the JSON a Go type is read from, for a person.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		if t == reflect.TypeFor[time.Time]() {
			return "an RFC 3339 time"
		}
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16,
		reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	case reflect.Map, reflect.Struct, reflect.Pointer:
		return "an object"
	}
	return "another kind of value"
}
