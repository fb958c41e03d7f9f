package admin

// The tenant portal's tokens: a token opens the admin API for one tenant (api.NewPortal), made by the
// Dispatcher's PortalToken for the service to hand to the tenant.
//
// A token is "wpt1.<payload>.<mac>": payload is the base64url (unpadded) of "<tenant>\n<expiry, Unix
// seconds>", mac the base64url of HMAC-SHA256(Options.PortalKey, "wpt1." + payload). It names one
// tenant and cannot be changed without the key; it expires.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/smartdrop/webhooks/internal/types"
)

const (
	// MaxPortalTokenTTL bounds the life of a portal token.
	MaxPortalTokenTTL = 24 * time.Hour
	// MinPortalKey is the shortest Options.PortalKey.
	MinPortalKey = 32
	// portalTokenPrefix starts every portal token (its format's version).
	portalTokenPrefix = "wpt1."
	// maxPortalToken bounds a token's length before it is parsed.
	maxPortalToken = 512
)

// PortalToken is a token, signed with key, that opens the portal for tenant until exp.
func PortalToken(key []byte, tenant string, exp time.Time) string {
	payload := base64.RawURLEncoding.EncodeToString([]byte(tenant + "\n" + strconv.FormatInt(exp.Unix(), 10)))
	return portalTokenPrefix + payload + "." + portalMAC(key, payload)
}

// portalMAC is the token's signature of a payload.
func portalMAC(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(portalTokenPrefix + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// ParsePortalToken checks a token with key at now and returns its tenant (a name validTenant
// accepts), or an error wrapping types.ErrInvalidToken.
func ParsePortalToken(key []byte, token string, now time.Time, validTenant func(string) error) (string, error) {
	if len(key) == 0 {
		return "", fmt.Errorf("%w: the portal has no key", types.ErrInvalidToken)
	}
	rest, ok := strings.CutPrefix(token, portalTokenPrefix)
	if !ok || len(token) > maxPortalToken {
		return "", fmt.Errorf("%w: malformed", types.ErrInvalidToken)
	}
	payload, mac, ok := strings.Cut(rest, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(portalMAC(key, payload))) {
		return "", fmt.Errorf("%w: bad signature", types.ErrInvalidToken)
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return "", fmt.Errorf("%w: malformed payload", types.ErrInvalidToken)
	}
	tenant, expiry, ok := strings.Cut(string(raw), "\n")
	exp, err := strconv.ParseInt(expiry, 10, 64)
	if !ok || err != nil || tenant == "" || validTenant(tenant) != nil {
		return "", fmt.Errorf("%w: malformed payload", types.ErrInvalidToken)
	}
	if now.Unix() >= exp {
		return "", fmt.Errorf("%w: expired", types.ErrInvalidToken)
	}
	return tenant, nil
}
