package webhooks

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/egress"
)

// The egress guard is tested in internal/egress; these tests hold the root's use of it: its errors
// wrap the root's sentinels, and Create applies the URL rule.

// TestEgressCreateRefusesBlockedHosts: Create refuses a URL whose host is a blocked address in any
// spelling, Unicode dot forms included (issue 21), with ErrInvalidWebhook and ErrBlockedAddress.
func TestEgressCreateRefusesBlockedHosts(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d, err := New(tr.rdb, Options{KeyPrefix: tr.prefix}) // the guard on, unlike newTestDispatcher
	require.NoError(t, err)
	ctx := context.Background()
	for _, u := range []string{
		"http://127.0.0.1/", "http://127.1/",
		"http://127\u30020\u30020\u30021/", "http://127\uff0e0\uff0e0\uff0e1/", "http://127\uff610\uff610\uff611/",
		"http://169\u3002254\u3002169\u3002254/latest/meta-data/", "http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/",
	} {
		_, err := d.Webhooks().Create(ctx, Webhook{URL: u, Events: []string{"*"}})
		assert.ErrorIs(t, err, ErrInvalidWebhook, "%s", u)
		assert.ErrorIs(t, err, ErrBlockedAddress, "%s", u)
	}
	_, err = d.Webhooks().Create(ctx, Webhook{URL: "https://example.com/hooks", Events: []string{"*"}})
	require.NoError(t, err, "a public host name is accepted")
}

// TestEgressNewRefusesUnguardableTransport: New refuses an HTTPClient whose Transport the guard
// cannot wrap, with ErrInvalidOptions, unless AllowPrivateNetworks.
func TestEgressNewRefusesUnguardableTransport(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	rt := http.NewFileTransport(http.Dir(t.TempDir())) // an http.RoundTripper that is no *http.Transport
	_, err := New(tr.rdb, Options{KeyPrefix: tr.prefix, HTTPClient: &http.Client{Transport: rt}})
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = New(tr.rdb, Options{KeyPrefix: tr.prefix, HTTPClient: &http.Client{Transport: rt}, AllowPrivateNetworks: true})
	require.NoError(t, err)
	assert.Same(t, egress.ErrBlocked, ErrBlockedAddress, "callers match the root sentinel")
}
