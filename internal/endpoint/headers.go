package endpoint

// A webhook's custom headers: their bounds, the names they may not set, their validation, and how
// they are set on a request.

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/smartdrop/webhooks/internal/types"
)

// Bounds of Webhook.Headers.
const (
	// MaxHeaders is the most custom headers a webhook may have.
	MaxHeaders = 16
	// MaxHeaderNameLen bounds a custom header's name, in bytes.
	MaxHeaderNameLen = 256
	// MaxHeaderValueLen bounds a custom header's value, in bytes.
	MaxHeaderValueLen = 1024
)

// ReservedHeaders are the header names (canonical form) a webhook's custom Headers may not set (the
// root's ReservedHeaders, which is this slice, says why).
var ReservedHeaders = []string{
	"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature", "Content-Type", "Content-Length", "Content-Encoding",
	"Host", "User-Agent", "Traceparent", "Tracestate", "Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Expect",
}

// ValidateHeaders checks a webhook's custom headers: at most MaxHeaders; names that are HTTP tokens of
// at most MaxHeaderNameLen bytes, not reserved, and no two of them, nor one and a reserved name, alike
// once '_' is read as '-' (CGI, PHP and WSGI servers read them as one); values of 1 to
// MaxHeaderValueLen bytes of UTF-8 without line breaks or other control bytes. Errors wrap
// types.ErrInvalidWebhook.
func ValidateHeaders(h map[string]string) error {
	if len(h) > MaxHeaders {
		return fmt.Errorf("%w: %d headers, at most %d", types.ErrInvalidWebhook, len(h), MaxHeaders)
	}
	seen := make(map[string]string, len(h))
	for name, v := range h {
		if name == "" || len(name) > MaxHeaderNameLen || strings.IndexFunc(name, func(c rune) bool { return !isTokenByte(c) }) >= 0 {
			return fmt.Errorf("%w: header name %.300q is not an HTTP token of at most %d bytes", types.ErrInvalidWebhook, name,
				MaxHeaderNameLen)
		}
		alias := headerAlias(name)
		if slices.Contains(ReservedHeaders, alias) {
			return fmt.Errorf("%w: header %s is set by the library and may not be overridden", types.ErrInvalidWebhook, name)
		}
		if other, ok := seen[alias]; ok {
			return fmt.Errorf("%w: headers %s and %s are one header to some servers", types.ErrInvalidWebhook, other, name)
		}
		seen[alias] = name
		if err := validateHeaderValue(name, v); err != nil {
			return err
		}
	}
	return nil
}

// headerAlias is the name a header is known by to servers that read '_' as '-' and ignore case.
func headerAlias(name string) string {
	return http.CanonicalHeaderKey(strings.ReplaceAll(name, "_", "-"))
}

// validateHeaderValue checks a custom header's value: 1 to MaxHeaderValueLen bytes of UTF-8 without
// control characters but tab. An invalid value is refused, never rewritten.
func validateHeaderValue(name, v string) error {
	switch {
	case v == "":
		return fmt.Errorf("%w: header %s: empty value", types.ErrInvalidWebhook, name)
	case len(v) > MaxHeaderValueLen:
		return fmt.Errorf("%w: header %s: value longer than %d bytes", types.ErrInvalidWebhook, name, MaxHeaderValueLen)
	case !utf8.ValidString(v):
		return fmt.Errorf("%w: header %s: value is not valid UTF-8", types.ErrInvalidWebhook, name)
	case strings.IndexFunc(v, func(c rune) bool { return c < ' ' && c != '\t' || c == 0x7f }) >= 0:
		return fmt.Errorf("%w: header %s: value holds a control character", types.ErrInvalidWebhook, name)
	}
	return nil
}

// isTokenByte reports whether c may appear in an HTTP header name (RFC 9110 tchar).
func isTokenByte(c rune) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c < 0x7f && strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}

// CanonicalHeaders returns the headers with canonical names (nil for none), so two spellings of one
// name cannot both be stored.
func CanonicalHeaders(h map[string]string) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[http.CanonicalHeaderKey(k)] = v
	}
	return out
}

// SetHeaders adds a webhook's custom headers to a request's, as spelled, before the library's own are
// set (so those cannot be overridden).
func SetHeaders(dst http.Header, h map[string]string) {
	for k, v := range h {
		dst[k] = []string{v}
	}
}
