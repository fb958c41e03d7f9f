package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/verify"
)

// TestErrorsSayWhatToChange: the errors of a newcomer's first hour (issue 43) name what to change, once
// and on one line: the Retention to set in days (and that value is accepted), the scheme to write, the
// options that allow a blocked address (one "webhooks:" prefix, not two), MaxPayloadBytes, where a
// schema's typo is (not the JSON Schema library's allOf/anyOf tree), what a receiver's key looks like
// (verify's errors start with "verify: ").
func TestErrorsSayWhatToChange(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	ctx := context.Background()
	d := newTestDispatcher(t, tr, Options{MaxPayloadBytes: 100})
	guarded, err := New(tr.rdb, Options{KeyPrefix: tr.prefix})
	require.NoError(t, err)
	monthOfRetries := Options{KeyPrefix: tr.prefix, RetrySchedule: []time.Duration{30 * 24 * time.Hour}}

	tests := []struct {
		name   string
		err    func() error
		is     error  // the sentinel it wraps, nil for none
		prefix string // what it starts with
		says   []string
		not    []string
	}{
		{name: "RetrySchedule longer than Retention", is: ErrInvalidOptions, prefix: "webhooks: invalid options: ",
			err:  func() error { _, err := New(tr.rdb, monthOfRetries); return err },
			says: []string{"set Options.Retention to at least 42 days (42 * 24 * time.Hour)", "Retention 168h0m0s is shorter"}},
		{name: "URL without its scheme", is: ErrInvalidWebhook, prefix: "webhooks: invalid webhook: ",
			err: func() error {
				_, err := d.Webhooks().Create(ctx, Webhook{URL: "localhost:8080/hook", Events: []string{"a"}})
				return err
			},
			says: []string{"write https://localhost:8080/hook (or http://)"}},
		{name: "blocked address", is: ErrBlockedAddress, prefix: "webhooks: invalid webhook: ",
			err: func() error {
				_, err := guarded.Webhooks().Create(ctx, Webhook{URL: "http://127.0.0.1:8080/hook", Events: []string{"a"}})
				return err
			},
			says: []string{"url host 127.0.0.1 is a blocked address (loopback)", "Options.AllowedNetworks", "Options.AllowPrivateNetworks"}},
		{name: "payload over the bound", is: ErrInvalidEvent, prefix: "webhooks: invalid event: ",
			err: func() error {
				_, err := d.Dispatch(ctx, Event{Type: "a", ID: "e1", Data: map[string]string{"x": strings.Repeat("y", 200)}})
				return err
			},
			says: []string{"more than Options.MaxPayloadBytes (100)", "raise MaxPayloadBytes"}},
		{name: "schema typo", is: ErrInvalidEventType, prefix: "webhooks: invalid event type: ",
			err: func() error {
				_, err := d.EventTypes().Create(ctx, EventType{Name: "order.created",
					Schema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integr"}}}`)})
				return err
			},
			says: []string{"at /properties/amount/type: value must be one of 'array', 'boolean', 'integer'"},
			not:  []string{"allOf", "anyOf", "metaschema", "urn:"}},
		{name: "verify.New of no key", prefix: "verify: ",
			err:  func() error { _, err := verify.New("not-a-secret"); return err },
			says: []string{"neither a whsec_… secret nor a whpk_… public key"}, not: []string{"not-a-secret"}},
		{name: "verify.New with an unset public key", prefix: "verify: ",
			err:  func() error { _, err := verify.New("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", ""); return err },
			says: []string{"key 2 of 2: the key is empty: pass only the keys you were given"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			require.Error(t, err)
			msg := err.Error()
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			assert.True(t, strings.HasPrefix(msg, tt.prefix), "starts with %q: %s", tt.prefix, msg)
			for _, s := range tt.says {
				assert.Contains(t, msg, s)
			}
			for _, s := range tt.not {
				assert.NotContains(t, msg, s)
			}
			assert.LessOrEqual(t, strings.Count(msg, "webhooks:"), 1, "one prefix: %s", msg)
			assert.NotContains(t, msg, "\n", "one line")
		})
	}

	// The Retention the error names is one New accepts.
	monthOfRetries.Retention = 42 * 24 * time.Hour
	_, err = New(tr.rdb, monthOfRetries)
	require.NoError(t, err, "the value the error names")
	monthOfRetries.Retention -= 24 * time.Hour
	_, err = New(tr.rdb, monthOfRetries)
	require.True(t, errors.Is(err, ErrInvalidOptions), "a day less is refused: the error named the least value in days")
}
