package rdb

// A webhook as the registry stores it: the JSON of types.Webhook, the secret it is rotating away
// from, and its credentials sealed at rest (internal/sealed) when secret keys are configured.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/smartdrop/webhooks/internal/sealed"
	"github.com/smartdrop/webhooks/internal/signing"
	"github.com/smartdrop/webhooks/internal/types"
)

// WebhookRecord is a webhook as the registry stores it: its JSON, and the secret it is rotating away
// from.
type WebhookRecord struct {
	types.Webhook
	// PrevSecret still signs requests, beside Secret, until PrevUntil (ms): secret rotation.
	PrevSecret string `json:"ps,omitempty"`
	PrevUntil  int64  `json:"pu,omitempty"`
	// URLPassword is, at rest, the password of URL's user info (a broker's), taken out of URL to be
	// sealed with the other credentials; "" in memory, where URL holds it (open puts it back).
	URLPassword string `json:"upw,omitempty"`
	// Unsealed is set when a sealed field could not be opened (types.ErrSecretKey): the field is then
	// "", and the webhook is neither attempted nor changed until the key is configured. Not stored.
	Unsealed error `json:"-"`
}

// ClearURLPassword reports whether URL carries a password in the clear where it is stored (a record
// decoded as stored, not opened): sealing it needs a rewrite (Reencrypt).
func (s *WebhookRecord) ClearURLPassword() bool {
	u, err := url.Parse(s.URL)
	if err != nil || u.User == nil {
		return false
	}
	_, ok := u.User.Password()
	return ok
}

// SealedFields are the record's fields sealed at rest when secret keys are configured, each with the
// name its associated data binds it to (with the webhook's id); custom header values are sealed too,
// each under its own name (sealedHeader).
func (s *WebhookRecord) SealedFields() map[string]*string {
	f := map[string]*string{"secret": &s.Secret, "ps": &s.PrevSecret, "url.password": &s.URLPassword}
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
// recorded in s.Unsealed.
func (s *WebhookRecord) open(ring *sealed.Ring) {
	for name, f := range s.SealedFields() {
		v, err := ring.Open(*f, sealedAAD(s.ID, name))
		if err != nil {
			s.Unsealed = fmt.Errorf("%w: webhook %s, field %s: %w", types.ErrSecretKey, s.ID, name, err)
			v = ""
		}
		*f = v
	}
	for name, sealedValue := range s.Headers {
		v, err := ring.Open(sealedValue, sealedAAD(s.ID, sealedHeader(name)))
		if err != nil {
			s.Unsealed = fmt.Errorf("%w: webhook %s, header %s: %w", types.ErrSecretKey, s.ID, name, err)
			v = ""
		}
		s.Headers[name] = v
	}
	if s.URLPassword != "" { // back into the URL, where the engine and callers read it
		if u, err := url.Parse(s.URL); err == nil && u.User != nil {
			u.User = url.UserPassword(u.User.Username(), s.URLPassword)
			s.URL = u.String()
		}
		s.URLPassword = ""
	}
}

// sealedCopy is s with its sealed fields sealed under ring's first key (s itself unchanged).
func (s *WebhookRecord) sealedCopy(ring *sealed.Ring) (*WebhookRecord, error) {
	c := *s
	c.Auth = types.CloneAuth(s.Auth)
	if u, err := url.Parse(s.URL); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok { // stored apart, sealed below
			u.User = url.User(u.User.Username())
			c.URL, c.URLPassword = u.String(), p
		}
	}
	for name, f := range c.SealedFields() {
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

// ParseWebhookRecord decodes a webhook as the registry stores it, its sealed fields opened with ring
// (a field it cannot open is recorded in Unsealed, not returned as an error).
func ParseWebhookRecord(raw string, ring *sealed.Ring) (*WebhookRecord, error) {
	var s WebhookRecord
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return nil, err
	}
	s.open(ring)
	return &s, nil
}

// Public is the stored webhook as callers see it, sharing nothing with s, with its PublicKey.
func (s *WebhookRecord) Public() *types.Webhook {
	w := s.Webhook
	w.Events, w.Headers, w.Filter = slices.Clone(s.Events), maps.Clone(s.Headers), slices.Clone(s.Filter)
	w.Auth = types.CloneAuth(s.Auth)
	if pk, err := signing.PublicKey(s.Secret); err == nil {
		w.PublicKey = pk
	}
	return &w
}

// Encode is a stored webhook's JSON, its sealed fields sealed with ring, with '<', '>' and '&' as
// they are (not escaped six-fold).
func (s *WebhookRecord) Encode(ring *sealed.Ring) ([]byte, error) {
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
// (legacyWebhookRecord).
func (s *WebhookRecord) UnmarshalJSON(b []byte) error {
	type plain WebhookRecord // the same fields without this method
	if err := json.Unmarshal(b, (*plain)(s)); err != nil {
		return err
	}
	if !s.CreatedAt.IsZero() {
		return nil
	}
	var l legacyWebhookRecord
	if err := json.Unmarshal(b, &l); err != nil {
		return err
	}
	s.Tenant, s.Description, s.Disabled, s.RateLimit, s.Headers, s.Filter = l.Tenant, l.Description, l.Disabled,
		l.RateLimit, l.Headers, l.Filter
	s.CreatedAt, s.UpdatedAt = time.UnixMilli(l.Created).UTC(), time.UnixMilli(l.Updated).UTC()
	return nil
}

// legacyWebhookRecord is the short names of the fields that builds before the one codec stored
// under other names than Webhook's; frozen (a webhook is written in the new form when next saved).
type legacyWebhookRecord struct {
	Tenant      string            `json:"t"`
	Description string            `json:"desc"`
	Disabled    bool              `json:"off"`
	RateLimit   int               `json:"rl"`
	Headers     map[string]string `json:"h"`
	Filter      json.RawMessage   `json:"f"`
	Created     int64             `json:"c"`
	Updated     int64             `json:"u"`
}
