package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
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
