package api

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/types"
)

// TestWebhookBodies: a create body refuses server-set and unknown fields and names the field of a
// wrong type; a PATCH keeps withheld header values and auth sent back, unless the URL changes.
func TestWebhookBodies(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"id":"wh_1","url":"https://a"}`: "invalid request: id is set by the server",
		`{"url":"https://a","x":1}`:       "invalid request: x is not a field of a webhook",
		`{"url":5}`:                       "invalid request: url must be a string, not a JSON number",
		`{"url":"https://a"} {}`:          "invalid request: malformed JSON body: more than one JSON value",
	} {
		_, err := webhookFromCreate([]byte(body))
		require.Error(t, err, body)
		assert.Equal(t, want, err.Error(), body)
		assert.True(t, errors.Is(err, ErrBadRequest), body)
	}
	var f interface{ Field() string }
	_, err := webhookFromCreate([]byte(`{"rate_limit":"x"}`))
	require.True(t, errors.As(err, &f))
	assert.Equal(t, "rate_limit", f.Field())

	cur := &types.Webhook{ID: "wh_1", URL: "https://a", Secret: "whsec_s", Headers: map[string]string{"X-Team": "t"},
		Auth: &types.EndpointAuth{Bearer: "tok"}, CreatedAt: time.Unix(1, 0).UTC()}
	view := WebhookView(cur, false)
	assert.Equal(t, map[string]string{"X-Team": ""}, view.Headers)
	assert.Equal(t, &types.EndpointAuth{Type: "bearer", Set: true}, view.Auth)
	assert.Empty(t, view.Secret)

	next, err := webhookPatch([]byte(`{"description":"d","headers":{"X-Team":""},"auth":{"type":"bearer","set":true}}`))(cur)
	require.NoError(t, err)
	assert.Equal(t, "t", next.Headers["X-Team"], "a withheld value sent back is kept")
	assert.Equal(t, "tok", next.Auth.Bearer, "the auth's view sent back keeps its credentials")
	assert.Equal(t, "whsec_s", next.Secret)

	next, err = webhookPatch([]byte(`{"url":"https://b"}`))(cur)
	require.NoError(t, err)
	assert.Nil(t, next.Headers, "a new URL takes no header it does not give")
	assert.Nil(t, next.Auth, "nor credentials")
	_, err = webhookPatch([]byte(`{"url":"https://b","headers":{"X-Team":""}}`))(cur)
	assert.ErrorIs(t, err, types.ErrInvalidWebhook)
	_, err = webhookPatch([]byte(`{"secret":"whsec_x"}`))(cur)
	assert.ErrorIs(t, err, ErrBadRequest)
	_, err = webhookPatch([]byte(`[]`))(cur)
	assert.ErrorIs(t, err, ErrBadRequest)
}

// TestViewDelivery: a pending delivery of a paused endpoint waits for its probe, of a disabled one for
// nothing; each says why.
func TestViewDelivery(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	pending := func() *types.Delivery {
		return &types.Delivery{ID: "dlv_1", Status: types.StatusPending, NextAttemptAt: now}
	}
	v := ViewDelivery(pending(), Endpoint{}, true, now)
	assert.Equal(t, "not attempted yet: due now, waiting for a worker", v.Why)

	open := Endpoint{Health: types.Health{State: types.CircuitOpen, ConsecutiveFailures: 5, OpenUntil: now.Add(time.Minute)}}
	v = ViewDelivery(pending(), open, true, now)
	assert.Equal(t, now.Add(time.Minute), v.NextAttemptAt)
	assert.Contains(t, v.Why, "paused after 5 failed attempts in a row, until 2026-12-05 01:01:00 (UTC)")

	v = ViewDelivery(pending(), Endpoint{Disabled: true, DisabledReason: "gone"}, true, now)
	assert.True(t, v.NextAttemptAt.IsZero())
	assert.Contains(t, v.Why, "the endpoint is disabled (gone)")

	v = ViewDelivery(&types.Delivery{Status: types.StatusFailed, LastError: "blocked"}, Endpoint{}, false, now)
	assert.Equal(t, "never attempted: blocked", v.Why)

	// A failed delivery says why it failed for good, in words, whether attempted or not.
	for _, tc := range []struct {
		attempts, code int
		lastError, why string
	}{
		{0, 0, types.NotAttemptedWebhookDisabled, "never attempted: the endpoint was disabled"},
		{2, 503, types.NotAttemptedWebhookDisabled, "failed after 2 attempts, then not attempted again: the endpoint was disabled"},
		{1, 0, types.NotAttemptedWebhookDeleted, "failed after 1 attempt, then not attempted again: the endpoint was deleted"},
		{3, 503, "HTTP 503", "failed after 3 attempts; the last: the endpoint answered 503 Service Unavailable"},
		{1, 410, "HTTP 410 Gone: the webhook was disabled", "failed after 1 attempt; the last: the endpoint answered 410 Gone: the webhook was disabled"},
		{2, 302, `HTTP 302 redirect to "/x" not followed`, `failed after 2 attempts; the last: the endpoint answered 302 Found: redirect to "/x" not followed`},
		{2, 0, "the connection to 127.0.0.1:8097 was refused", "failed after 2 attempts; the last: the connection to 127.0.0.1:8097 was refused"},
	} {
		dl := &types.Delivery{Status: types.StatusFailed, Attempts: tc.attempts, LastStatusCode: tc.code, LastError: tc.lastError}
		assert.Equal(t, tc.why, ViewDelivery(dl, Endpoint{}, true, now).Why, "%+v", tc)
	}
	skipped := &types.Delivery{Status: types.StatusSkipped, LastError: "skipped: the webhook's transformation gave null for this event; nothing was sent"}
	assert.Equal(t, skipped.LastError, ViewDelivery(skipped, Endpoint{}, true, now).Why, "a skipped delivery says why")
}
