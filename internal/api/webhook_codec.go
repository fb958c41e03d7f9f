package api

// A webhook's JSON as the API takes and sends it. A Webhook's JSON (its struct tags) is what the API
// and the portal send and take, and what the web UI shows; what the API may not read or set is said
// here once: server-set fields (serverSetField), fields a PATCH keeps (types.KeepFields), credentials
// withheld (WebhookView).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/smartdrop/webhooks/internal/types"
)

// fieldError is a request body's error about one of its fields, named as in its JSON (the answer's
// "field").
type fieldError struct {
	field string
	err   error
}

// inField marks err as about the body's field name.
func inField(name string, err error) error { return &fieldError{field: name, err: err} }

func (e *fieldError) Error() string { return e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// Field is the JSON name of the field the error is about.
func (e *fieldError) Field() string { return e.field }

// decodeWebhookJSON decodes one JSON object into w, refusing unknown fields and trailing data.
func decodeWebhookJSON(b []byte, w *types.Webhook) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(w); err != nil {
		return jsonBodyError(err)
	}
	if dec.More() {
		return fmt.Errorf("%w: malformed JSON body: more than one JSON value", ErrBadRequest)
	}
	return nil
}

// webhookFromCreate decodes the body of a create: a Webhook's JSON without the server-set fields.
func webhookFromCreate(body []byte) (types.Webhook, error) {
	var w types.Webhook
	if err := decodeWebhookJSON(body, &w); err != nil {
		return w, err
	}
	if f := serverSetField(&w); f != "" {
		return w, fmt.Errorf("%w: %s is set by the server", ErrBadRequest, f)
	}
	return w, nil
}

// serverSetField names a field of a create request that only the server sets, or "".
func serverSetField(w *types.Webhook) string {
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

// webhookPatch is the change a PATCH body makes to a webhook (applyPatch); a body that is not a JSON
// object fails the change.
func webhookPatch(patch []byte) func(cur *types.Webhook) (types.Webhook, error) {
	return func(cur *types.Webhook) (types.Webhook, error) {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(patch, &fields); err != nil || fields == nil {
			return types.Webhook{}, fmt.Errorf("%w: the body must be a JSON object", ErrBadRequest)
		}
		return applyPatch(cur, fields)
	}
}

// applyPatch applies a PATCH's fields to cur: each field present replaces cur's (null clears it),
// like a JSON merge patch of the webhook's JSON. A custom header given with the value "" keeps the
// value it has (so a webhook read from the API, whose header values are withheld, can be sent back).
// Fields PATCH does not change must be absent or equal to cur's.
//
// A PATCH that changes the URL takes no credential to the new URL that it does not give itself: the
// custom headers and Auth it does not name are dropped, and keeping one (a header sent back as "", the
// API's view of Auth sent back) is refused, since its value would go to a host the caller may control.
func applyPatch(cur *types.Webhook, fields map[string]json.RawMessage) (types.Webhook, error) {
	merged, err := json.Marshal(cur)
	if err != nil {
		return types.Webhook{}, fmt.Errorf("webhooks: encode webhook: %w", err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(merged, &all); err != nil {
		return types.Webhook{}, fmt.Errorf("webhooks: decode webhook: %w", err)
	}
	maps.Copy(all, fields)
	if merged, err = json.Marshal(all); err != nil {
		return types.Webhook{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	var next types.Webhook
	if err := decodeWebhookJSON(merged, &next); err != nil {
		return types.Webhook{}, err
	}
	kept := next
	types.KeepFields(&kept, cur)
	if a, b := encodeWebhook(&kept), encodeWebhook(&next); !bytes.Equal(a, b) {
		return types.Webhook{}, fmt.Errorf("%w: PATCH does not change id, tenant, secret, public_key, asymmetric, created_at or updated_at",
			ErrBadRequest)
	}
	if kept.URL == URLView(cur.URL) { // the API's view sent back: keep the URL's password
		kept.URL = cur.URL
	} else if u, err := url.Parse(kept.URL); err == nil && u.User != nil {
		if p, _ := u.User.Password(); p == redactedPassword {
			return types.Webhook{}, inField("url", fmt.Errorf("%w: url: the password %q is the API's view of one, and the URL changes, so it is not kept: give the password again",
				types.ErrInvalidWebhook, redactedPassword))
		}
	}
	if kept.URL != cur.URL {
		if _, named := fields["auth"]; !named || authIsView(kept.Auth) {
			if named {
				return types.Webhook{}, inField("auth", fmt.Errorf("%w: auth: the URL changes, so its credentials are not kept: give them again, or null",
					types.ErrInvalidWebhook))
			}
			kept.Auth = nil
		}
		if _, named := fields["headers"]; !named {
			kept.Headers = nil
		}
		for name, v := range kept.Headers {
			if v == "" {
				return types.Webhook{}, inField("headers", fmt.Errorf("%w: header %s: the URL changes, so its value is not kept: give it again, or leave the header out",
					types.ErrInvalidWebhook, name))
			}
		}
	}
	if authIsView(kept.Auth) { // the API's view sent back: keep the credentials
		if authView(cur.Auth) == nil || *kept.Auth != *authView(cur.Auth) {
			return types.Webhook{}, fmt.Errorf("%w: auth: give the credentials of one method, or send back the webhook's own view of it",
				types.ErrInvalidWebhook)
		}
		kept.Auth = cur.Auth // cur is the caller's copy (Backend.PatchWebhook)
	}
	for name, v := range kept.Headers {
		if v != "" {
			continue
		}
		old, ok := cur.Headers[http.CanonicalHeaderKey(name)]
		if !ok {
			return types.Webhook{}, fmt.Errorf("%w: header %s has no value to keep", types.ErrInvalidWebhook, name)
		}
		kept.Headers[name] = old
	}
	return kept, nil
}

// encodeWebhook is a webhook's JSON (nil if its filter is not JSON, which the registry refuses).
func encodeWebhook(w *types.Webhook) []byte {
	b, _ := json.Marshal(w)
	return b
}

// WebhookView is a webhook as the API and the portal send it: custom header values withheld (each
// header present with the value ""), auth shown as its type and set, never its credentials, and the
// secret only when withSecret (create and rotate-secret).
func WebhookView(w *types.Webhook, withSecret bool) *types.Webhook {
	v := *w
	v.URL = URLView(w.URL)
	v.Auth = authView(w.Auth)
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

// redactedPassword is what url.URL.Redacted puts in a password's place.
const redactedPassword = "xxxxx"

// URLView is a webhook URL as the API shows it: a password in its user info (a broker's) replaced by
// "xxxxx".
func URLView(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); !ok {
		return raw
	}
	return u.Redacted()
}

// authIsView reports whether a is only the API's view (Type and Set, no credentials).
func authIsView(a *types.EndpointAuth) bool {
	return a != nil && len(types.AuthKinds(a)) == 0 && (a.Type != "" || a.Set)
}

// authView is a as the API shows it: its Type, and Set.
func authView(a *types.EndpointAuth) *types.EndpointAuth {
	if a == nil {
		return nil
	}
	k := types.AuthKinds(a)
	if len(k) == 0 {
		return nil
	}
	return &types.EndpointAuth{Type: k[0], Set: true}
}

// jsonBodyError is a request body's decoding error in words for a person, naming the field when it is
// about one (no Go type or struct names): a field of the wrong type, an unknown field, or JSON that does
// not parse.
func jsonBodyError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return inField(typeErr.Field, fmt.Errorf("%w: %s must be %s, not a JSON %s", ErrBadRequest, typeErr.Field,
			jsonKind(typeErr.Type), typeErr.Value))
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("%w: the body is not valid JSON (at byte %d)", ErrBadRequest, syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Errorf("%w: the body is not valid JSON (it ends early)", ErrBadRequest)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return inField(name, fmt.Errorf("%w: %s is not a field of a webhook", ErrBadRequest, name))
	}
	return fmt.Errorf("%w: the body is not a JSON object of a webhook's fields", ErrBadRequest)
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
