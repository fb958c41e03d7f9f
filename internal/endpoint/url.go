package endpoint

// The egress guard (internal/egress) as webhooks use it: the URL rule of Create and Update, and the
// guarded HTTP client of New, their errors wrapping the library's sentinels.

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/smartdrop/webhooks/internal/egress"
	"github.com/smartdrop/webhooks/internal/types"
)

// CheckURL is egress.Policy.CheckURL, its error wrapping types.ErrInvalidWebhook (and
// types.ErrBlockedAddress for a blocked host).
func CheckURL(raw string, requireHTTPS bool, p egress.Policy) error {
	if err := p.CheckURL(raw, requireHTTPS); err != nil {
		return fmt.Errorf("%w: %w", types.ErrInvalidWebhook, err)
	}
	return nil
}

// NewClient is egress.Policy.Client, its error wrapping types.ErrInvalidOptions.
func NewClient(user *http.Client, timeout time.Duration, p egress.Policy) (*http.Client, error) {
	c, err := p.Client(user, timeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", types.ErrInvalidOptions, err)
	}
	return c, nil
}

// RedactURL is a webhook URL without user info, query or fragment (they may carry credentials), for
// telemetry and operational events.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
