package webhooks

// The egress guard (internal/egress) as the root uses it: the URL rule of Create and Update, and the
// guarded HTTP client of New, their errors wrapping the root's sentinels.

import (
	"fmt"
	"net/http"
	"time"

	"github.com/smartdrop/webhooks/internal/egress"
)

// validateWebhookURL is egress.Policy.CheckURL, its error wrapping ErrInvalidWebhook (and
// ErrBlockedAddress for a blocked host).
func validateWebhookURL(raw string, requireHTTPS bool, p egress.Policy) error {
	if err := p.CheckURL(raw, requireHTTPS); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidWebhook, err)
	}
	return nil
}

// newHTTPClient is egress.Policy.Client, its error wrapping ErrInvalidOptions.
func newHTTPClient(user *http.Client, timeout time.Duration, p egress.Policy) (*http.Client, error) {
	c, err := p.Client(user, timeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return c, nil
}
