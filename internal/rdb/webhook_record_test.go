package rdb

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/sealed"
	"github.com/smartdrop/webhooks/internal/types"
)

// TestWebhookRecordSealsItsCredentials: with keys, a record's secret, previous secret, credentials and
// header values are stored sealed (bound to the webhook), read back in the clear, and a record read
// without its key says so in Unsealed, its sealed fields "".
func TestWebhookRecordSealsItsCredentials(t *testing.T) {
	t.Parallel()
	ring, err := sealed.NewRing([][]byte{bytes.Repeat([]byte{7}, sealed.KeySize)})
	require.NoError(t, err)
	rec := &WebhookRecord{Webhook: types.Webhook{ID: "wh_1", URL: "https://example.com/<x>", Secret: "whsec_s",
		Headers: map[string]string{"X-Token": "h-secret"}, Auth: &types.EndpointAuth{Bearer: "b-secret"},
		CreatedAt: time.UnixMilli(1_700_000_000_000).UTC()}, PrevSecret: "whsec_p", PrevUntil: 5}
	raw, err := rec.Encode(ring)
	require.NoError(t, err)
	for _, clear := range []string{"whsec_s", "whsec_p", "h-secret", "b-secret"} {
		assert.NotContains(t, string(raw), clear)
	}
	assert.Contains(t, string(raw), "https://example.com/<x>", "'<' as it is")
	assert.Equal(t, "whsec_s", rec.Secret, "Encode leaves the record as it is")

	back, err := ParseWebhookRecord(string(raw), ring)
	require.NoError(t, err)
	require.NoError(t, back.Unsealed)
	assert.Equal(t, rec, back)

	keyless, err := ParseWebhookRecord(string(raw), nil)
	require.NoError(t, err)
	assert.True(t, errors.Is(keyless.Unsealed, types.ErrSecretKey))
	assert.Empty(t, keyless.Secret)

	moved := bytes.ReplaceAll(raw, []byte(`"id":"wh_1"`), []byte(`"id":"wh_2"`))
	other, err := ParseWebhookRecord(string(moved), ring)
	require.NoError(t, err)
	assert.Error(t, other.Unsealed, "a sealed value is bound to its webhook")
}

// TestWebhookRecordPublicSharesNothing: Public is a copy with the public key of an ed25519 secret;
// changing it leaves the record as it is.
func TestWebhookRecordPublicSharesNothing(t *testing.T) {
	t.Parallel()
	rec := &WebhookRecord{Webhook: types.Webhook{ID: "wh_1", Events: []string{"a"}, Headers: map[string]string{"X-A": "1"},
		Auth: &types.EndpointAuth{Basic: &types.BasicAuth{User: "u", Password: "p"}}}}
	w := rec.Public()
	w.Events[0], w.Headers["X-A"], w.Auth.Basic.Password = "b", "2", "q"
	assert.Equal(t, []string{"a"}, rec.Events)
	assert.Equal(t, "1", rec.Headers["X-A"])
	assert.Equal(t, "p", rec.Auth.Basic.Password)
	assert.Empty(t, w.PublicKey, "an HMAC secret has no public key")
}
