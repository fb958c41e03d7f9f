package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/verify"
)

// memDest is a destination of scheme "mem" that keeps what it is sent, answering with fail's error
// when fail is set.
type memDest struct {
	mu   sync.Mutex
	got  []Message
	fail func(m *Message) error
	dial func(m *Message) error // when set, runs first: a test dials through the message's guard
}

func (*memDest) Schemes() []string { return []string{"mem"} }

func (*memDest) Check(u *url.URL) error {
	if strings.Trim(u.Path, "/") == "" {
		return errors.New("a mem URL names its box: mem://host/box")
	}
	return nil
}

func (d *memDest) Send(ctx context.Context, m *Message) error {
	if d.dial != nil {
		if err := d.dial(m); err != nil {
			return err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c := *m
	c.Header, c.Body, c.Dial = m.Header.Clone(), append([]byte(nil), m.Body...), nil
	d.got = append(d.got, c)
	if d.fail != nil {
		return d.fail(m)
	}
	m.Response = "stored in box " + strings.Trim(m.URL.Path, "/")
	return nil
}

func (d *memDest) messages() []Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Message(nil), d.got...)
}

// TestDestinationSchemeMustBeServed: Create refuses a URL whose scheme no destination serves, naming
// the scheme and the option, and a destination's own Check refuses what it cannot send to.
func TestDestinationSchemeMustBeServed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	plain := newTestDispatcher(t, tr, Options{})
	_, err := plain.Webhooks().Create(ctx, Webhook{URL: "mem://box.example/b1", Events: []string{"*"}})
	require.ErrorIs(t, err, ErrInvalidWebhook)
	assert.Contains(t, err.Error(), `url scheme "mem" is served by no destination`)
	assert.Contains(t, err.Error(), "Options.Destinations")

	d := newTestDispatcher(t, tr, Options{Destinations: []Destination{&memDest{}}})
	_, err = d.Webhooks().Create(ctx, Webhook{URL: "mem://box.example/", Events: []string{"*"}})
	require.ErrorIs(t, err, ErrInvalidWebhook)
	assert.Contains(t, err.Error(), "a mem URL names its box")
	_, err = d.Webhooks().Create(ctx, Webhook{URL: "mem://box.example/b1", Events: []string{"*"}})
	require.NoError(t, err)

	_, err = New(tr.rdb, Options{Destinations: []Destination{&memDest{}, &memDest{}}})
	require.ErrorIs(t, err, ErrInvalidOptions, "two destinations of one scheme")
}

// TestDestinationReceivesSignedMessages: a webhook of a destination's scheme gets each delivery
// through its Send, once, with the delivery's id, the event's fields and Standard Webhooks headers a
// consumer verifies with the verify package; the delivery records the destination's answer.
func TestDestinationReceivesSignedMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	mem := &memDest{}
	d := newTestDispatcher(t, tr, Options{Destinations: []Destination{mem}})
	w, err := d.Webhooks().Create(ctx, Webhook{URL: "mem://box.example/orders", Tenant: "acme", Events: []string{"order.*"},
		Headers: map[string]string{"X-Team": "billing"}})
	require.NoError(t, err)
	v, err := verify.New(w.Secret)
	require.NoError(t, err)
	for i, evt := range []Event{{Type: "order.paid", ID: "o1", Tenant: "acme", Data: map[string]int{"n": 1}},
		{Type: "order.paid", ID: "o2", Tenant: "acme", OrderKey: "cust-7", Data: map[string]int{"n": 2}}} {
		for range 2 { // the second is a duplicate: nothing sent
			res, err := d.Dispatch(ctx, evt)
			require.NoError(t, err)
			require.Len(t, res, 1)
			assert.Equal(t, StatusSuccess, res[0].Delivery.Status, res[0].Delivery.LastError)
		}
		got := mem.messages()
		require.Len(t, got, i+1, "one message per delivery")
		m := got[i]
		dl, err := d.Deliveries().Get(ctx, m.ID)
		require.NoError(t, err, "the message's id is the delivery's webhook-id")
		assert.Equal(t, evt.ID, dl.EventID)
		assert.Equal(t, "stored in box orders", dl.History[0].Response, "the destination's answer is recorded")
		assert.Equal(t, []any{"order.paid", evt.ID, "acme", evt.OrderKey, w.ID, 1},
			[]any{m.EventType, m.EventID, m.Tenant, m.OrderKey, m.WebhookID, m.Attempt})
		assert.Equal(t, m.ID, m.Header.Get("webhook-id"))
		assert.Equal(t, "billing", m.Header.Get("X-Team"), "custom headers travel with the message")
		require.NoError(t, v.Verify(m.Header, m.Body), "a consumer verifies the message as an HTTP receiver does")
		var body struct {
			ID, Type string
			Data     map[string]int
		}
		require.NoError(t, json.Unmarshal(m.Body, &body))
		assert.Equal(t, []any{evt.ID, "order.paid", i + 1}, []any{body.ID, body.Type, body.Data["n"]})
	}
}

// TestDestinationFailureKinds: what a destination's error says decides what the engine does — a plain
// error is retried and counted by the breaker, a refusal is retried and not counted, a permanent
// failure fails at once, gone disables the webhook, RetryAfter delays the retry.
func TestDestinationFailureKinds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		err        error
		status     Status
		circuit    CircuitState // after BreakAfter (2) such failures
		disabled   bool
		retryAfter time.Duration
	}{
		{"unavailable", errors.New("the broker did not confirm within the timeout"), StatusPending, CircuitOpen, false, 0},
		{"rejected", &destination.Error{Kind: destination.Rejected, Err: errors.New("refused")}, StatusPending, CircuitClosed, false, 0},
		{"permanent", &destination.Error{Kind: destination.Permanent, Err: errors.New("message too large")}, StatusFailed, CircuitClosed, false, 0},
		{"gone", &destination.Error{Kind: destination.Gone, Err: errors.New("the queue was deleted")}, StatusFailed, CircuitDisabled, true, 0},
		{"retry after", destination.RetryAfter(errors.New("slow down"), 40*time.Minute), StatusPending, CircuitOpen, false, 40 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			mem := &memDest{fail: func(*Message) error { return tc.err }}
			d := newTestDispatcher(t, tr, Options{Destinations: []Destination{mem}, BreakAfter: 2,
				RetrySchedule: []time.Duration{time.Second, time.Second}})
			w, err := d.Webhooks().Create(ctx, Webhook{URL: "mem://box.example/b", Events: []string{"*"}})
			require.NoError(t, err)
			start := time.Now()
			var last *Delivery
			for _, id := range []string{"e1", "e2"} {
				res, err := d.Dispatch(ctx, Event{Type: "t", ID: id})
				require.NoError(t, err)
				if tc.disabled && id == "e2" {
					assert.Empty(t, res, "a disabled webhook takes no more events")
					break
				}
				require.Len(t, res, 1)
				last = res[0].Delivery
				assert.Equal(t, tc.status, last.Status)
				assert.Contains(t, last.LastError, tc.err.Error(), "the failure in the destination's words")
			}
			h, err := d.Webhooks().Health(ctx, w.ID)
			require.NoError(t, err)
			assert.Equal(t, tc.circuit, h.State)
			got, err := d.Webhooks().Get(ctx, w.ID)
			require.NoError(t, err)
			assert.Equal(t, tc.disabled, got.Disabled)
			if tc.retryAfter > 0 {
				assert.GreaterOrEqual(t, last.NextAttemptAt.Sub(start), tc.retryAfter)
			}
		})
	}
}

// TestDestinationDialsThroughTheGuard: a Message's Dial is the egress guard's: a destination that
// dials a private address with it is refused unless the Dispatcher allows private networks, and a
// broker URL whose host is a private address is refused at Create.
func TestDestinationDialsThroughTheGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	var dialErr error
	mem := &memDest{dial: func(m *Message) error {
		c, err := m.Dial(ctx, "tcp", "127.0.0.1:1")
		if c != nil {
			_ = c.Close()
		}
		dialErr = err
		return err
	}}
	opts := Options{Destinations: []Destination{mem}, KeyPrefix: tr.prefix, Timeout: time.Second, BreakAfter: -1}
	guarded, err := New(tr.rdb, opts)
	require.NoError(t, err)
	_, err = guarded.Webhooks().Create(ctx, Webhook{URL: "mem://10.0.0.1:5672/b", Events: []string{"*"}})
	require.ErrorIs(t, err, ErrBlockedAddress, "a broker on a private address is refused at Create")
	_, err = guarded.Webhooks().Create(ctx, Webhook{URL: "mem://broker.example/b", Events: []string{"*"}})
	require.NoError(t, err)
	res, err := guarded.Dispatch(ctx, Event{Type: "t", ID: "e1"})
	require.NoError(t, err)
	assert.ErrorIs(t, dialErr, ErrBlockedAddress, "the message's Dial refused loopback")
	assert.Contains(t, res[0].Delivery.LastError, "blocked address")
	assert.Empty(t, mem.messages())
}

// TestBrokerPasswordIsSealedAndNeverShown: a broker URL's password is sealed at rest with SecretKeys
// (no key or value in Redis holds it), never in an API answer, and reaches the destination's Send.
func TestBrokerPasswordIsSealedAndNeverShown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	const password = "pa55-broker-Zq7"
	mem := &memDest{}
	d := newTestDispatcher(t, tr, Options{Destinations: []Destination{mem}, SecretKeys: [][]byte{secretKey(1)}})
	w, err := d.Webhooks().Create(ctx, Webhook{URL: "mem://tenant:" + password + "@broker.example/b", Events: []string{"*"}})
	require.NoError(t, err)
	_, err = d.Dispatch(ctx, Event{Type: "t", ID: "e1"})
	require.NoError(t, err)
	got := mem.messages()
	require.Len(t, got, 1)
	p, _ := got[0].URL.User.Password()
	assert.Equal(t, password, p, "Send gets the credentials")

	for k, v := range rawKeyspace(t, tr.rdb, tr.prefix) {
		assert.NotContains(t, string(v), password, "key %s holds the password", k)
	}
	for _, path := range []string{"/webhooks", "/webhooks/" + w.ID} {
		rec := call(d.Handler(), http.MethodGet, path, "")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		assert.NotContains(t, rec.Body.String(), password, path)
		assert.Contains(t, rec.Body.String(), "mem://tenant:xxxxx@broker.example/b", path)
	}
	dl, err := d.Deliveries().Get(ctx, got[0].ID)
	require.NoError(t, err)
	rec := call(d.Handler(), http.MethodGet, "/deliveries/"+dl.ID+"/request", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.NotContains(t, rec.Body.String(), password)

	// The API's view sent back keeps the password; a new URL with the view's "xxxxx" is refused.
	view := "mem://tenant:xxxxx@broker.example/b"
	rec = callWith(d.Handler(), http.MethodPatch, "/webhooks/"+w.ID, "", `{"url":"`+view+`","description":"kept"}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	kept, err := d.Webhooks().Get(ctx, w.ID)
	require.NoError(t, err)
	assert.Equal(t, w.URL, kept.URL, "the password is kept")
	rec = callWith(d.Handler(), http.MethodPatch, "/webhooks/"+w.ID, "", `{"url":"mem://tenant:xxxxx@evil.example/b"}`)
	assert.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "give the password again")
}
