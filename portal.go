package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The tenant portal: an admin API for one tenant, opened by a token the service makes for it.
//
// A token is "wpt1.<payload>.<mac>": payload is the base64url (unpadded) of "<tenant>\n<expiry, Unix
// seconds>", mac the base64url of HMAC-SHA256(Options.PortalKey, "wpt1." + payload). It names one
// tenant and cannot be changed without the key; it expires.

const (
	// MaxPortalTokenTTL bounds the life of a portal token.
	MaxPortalTokenTTL = 24 * time.Hour
	// minPortalKey is the shortest Options.PortalKey.
	minPortalKey = 32
	// portalTokenPrefix starts every portal token (its format's version).
	portalTokenPrefix = "wpt1."
	// maxPortalToken bounds a token's length before it is parsed.
	maxPortalToken = 512
)

// PortalToken makes a token that opens Portal for one tenant until ttl from now (at most
// MaxPortalTokenTTL). It needs Options.PortalKey. Hand it to the tenant's browser or client as a bearer
// token; anyone holding it can manage that tenant's webhooks until it expires.
func (d *Dispatcher) PortalToken(tenant string, ttl time.Duration) (string, error) {
	if len(d.opts.PortalKey) == 0 {
		return "", fmt.Errorf("%w: PortalToken needs Options.PortalKey", ErrInvalidOptions)
	}
	if tenant == "" {
		return "", fmt.Errorf("%w: a portal token names a tenant", ErrInvalidWebhook)
	}
	if err := validateTenant(tenant); err != nil {
		return "", err
	}
	if ttl <= 0 || ttl > MaxPortalTokenTTL {
		return "", fmt.Errorf("%w: ttl must be in (0, %s]", ErrInvalidOptions, MaxPortalTokenTTL)
	}
	exp := d.now().Add(ttl).Unix()
	payload := base64.RawURLEncoding.EncodeToString([]byte(tenant + "\n" + strconv.FormatInt(exp, 10)))
	return portalTokenPrefix + payload + "." + portalMAC(d.opts.PortalKey, payload), nil
}

// portalMAC is the token's signature of a payload.
func portalMAC(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(portalTokenPrefix + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// parsePortalToken checks a token with key at now and returns its tenant, or an error wrapping
// ErrInvalidToken.
func parsePortalToken(key []byte, token string, now time.Time) (string, error) {
	if len(key) == 0 {
		return "", fmt.Errorf("%w: the portal has no key", ErrInvalidToken)
	}
	rest, ok := strings.CutPrefix(token, portalTokenPrefix)
	if !ok || len(token) > maxPortalToken {
		return "", fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	payload, mac, ok := strings.Cut(rest, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(portalMAC(key, payload))) {
		return "", fmt.Errorf("%w: bad signature", ErrInvalidToken)
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return "", fmt.Errorf("%w: malformed payload", ErrInvalidToken)
	}
	tenant, expiry, ok := strings.Cut(string(raw), "\n")
	exp, err := strconv.ParseInt(expiry, 10, 64)
	if !ok || err != nil || tenant == "" || validateTenant(tenant) != nil {
		return "", fmt.Errorf("%w: malformed payload", ErrInvalidToken)
	}
	if now.Unix() >= exp {
		return "", fmt.Errorf("%w: expired", ErrInvalidToken)
	}
	return tenant, nil
}

// tenantKeyType keys the portal request's tenant in its context.
type tenantKeyType struct{}

// requestTenant is the tenant of a portal request ("" outside the portal).
func requestTenant(r *http.Request) string {
	t, _ := r.Context().Value(tenantKeyType{}).(string)
	return t
}

// Portal returns the tenant-scoped admin API: the routes of Handler, each restricted to the tenant
// named by the request's token (from PortalToken), sent as "Authorization: Bearer <token>". Another
// tenant's webhook or delivery answers 404, as if it did not exist; a missing, malformed, tampered,
// expired or otherwise-keyed token answers 401; a tenant cannot set or change its tenant (a "tenant"
// field is refused with 400) nor its quota. Errors have Handler's JSON shape. Unlike Handler, Portal
// may face the tenant's own users directly. Its /ui/ serves the web UI's static files without a token;
// open it at /ui/#token=<token> (the fragment never reaches the server).
func (d *Dispatcher) Portal() http.Handler {
	h := d.newAdminHandler(true)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isUIPath(r.URL.Path) && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			h.ServeHTTP(w, r) // the UI's static files hold no data; every API call it makes needs the token
			return
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		tenant, err := parsePortalToken(d.opts.PortalKey, strings.TrimSpace(token), d.now())
		if !ok || err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="webhooks portal"`)
			writeAPIError(w, http.StatusUnauthorized, "unauthorized", "a valid portal token is required")
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKeyType{}, tenant)))
	})
}
