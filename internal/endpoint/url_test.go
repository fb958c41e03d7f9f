package endpoint

import (
	"errors"
	"net/url"
	"testing"

	"github.com/smartdrop/webhooks/internal/egress"
	"github.com/smartdrop/webhooks/internal/types"
)

// FuzzCheckURL: the URL rule never panics, refuses only with types.ErrInvalidWebhook, and
// accepts only absolute http(s) URLs with a host and without user info (internal/egress's
// own FuzzCheckURL also checks the host against the deny list).
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/hooks", "http://127.1/", "http://[::ffff:127.0.0.1]:80/", "http://0x7f000001/",
		"https://user@host/", "http://localhost./", "ftp://x/", "//x", "", "http://127\u30020\u30020\u30021/",
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, https bool) {
		err := CheckURL(raw, https, egress.Policy{})
		if err != nil {
			if !errors.Is(err, types.ErrInvalidWebhook) {
				t.Fatalf("%q: error %v does not wrap types.ErrInvalidWebhook", raw, err)
			}
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil || len(raw) > egress.MaxURLLen || u.User != nil || u.Hostname() == "" ||
			(u.Scheme != "https" && (https || u.Scheme != "http")) {
			t.Fatalf("%q accepted", raw)
		}
	})
}

// TestRedactURL: user info, query and fragment are left out.
func TestRedactURL(t *testing.T) {
	if got := RedactURL("https://user:pw@example.com/hook?token=s3cret#frag"); got != "https://example.com/hook" {
		t.Fatalf("RedactURL: %q", got)
	}
}
