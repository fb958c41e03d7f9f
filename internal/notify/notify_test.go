package notify

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// fakeWebhooks is a registry of one webhook of tenant "acme"; Disable disables it once.
type fakeWebhooks struct {
	mu       sync.Mutex
	disabled []string // the reasons, in order
}

func (f *fakeWebhooks) StoredByID(_ context.Context, ids []string) (map[string]*rdb.WebhookRecord, error) {
	out := map[string]*rdb.WebhookRecord{}
	for _, id := range ids {
		out[id] = &rdb.WebhookRecord{Webhook: types.Webhook{ID: id, Tenant: "acme", URL: "https://user:pw@example.com/h?k=s"}}
	}
	return out, nil
}

func (f *fakeWebhooks) Disable(_ context.Context, _, reason string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.disabled = append(f.disabled, reason)
	return len(f.disabled) == 1, nil
}

// scene is a Notifier with every hook recording its call, operational events on, and what it sent.
type scene struct {
	n      *Notifier
	hooks  []string
	events []types.Event // enqueued operational events
	log    bytes.Buffer
	reg    *fakeWebhooks
	now    time.Time
}

func newScene(t *testing.T) *scene {
	t.Helper()
	s := &scene{reg: &fakeWebhooks{}, now: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)}
	record := func(name string) { s.hooks = append(s.hooks, name) }
	client := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = client.Close() })
	s.n = &Notifier{
		Hooks: types.Hooks{
			AttemptFinished:   func(types.AttemptInfo) { record("AttemptFinished") },
			DeliverySucceeded: func(types.Delivery) { record("DeliverySucceeded") },
			DeliveryFailed:    func(types.Delivery) { record("DeliveryFailed") },
			CircuitOpened:     func(string, time.Time) { record("CircuitOpened") },
			CircuitClosed:     func(string) { record("CircuitClosed") },
			WebhookDisabled:   func(string, string) { record("WebhookDisabled") },
		},
		Log:               slog.New(slog.NewTextHandler(&s.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:               func() time.Time { return s.now },
		OperationalEvents: true,
		DisableAfter:      time.Hour,
		Webhooks:          s.reg,
		Client:            client,
		Keys:              rdb.KeysOf("wht_notify", 1),
		Enqueue: func(_ context.Context, evt types.Event, about string) error {
			require.Equal(t, "wh_1", about)
			s.events = append(s.events, evt)
			return nil
		},
	}
	return s
}

// eventTypes are the types of the operational events sent, one per tenant scope.
func (s *scene) eventTypes() []string {
	var out []string
	for _, e := range s.events {
		out = append(out, e.Type+"@"+e.Tenant)
	}
	return out
}

// TestRecordedOutcomeRunsItsHooks: a recorded outcome runs the hooks of what it did, logs it at its
// level, sends delivery.failed to the webhook's tenant and to the operator for a delivery failed for
// good (not for an operational event's own delivery), and disables the webhook once on 410 Gone.
func TestRecordedOutcomeRunsItsHooks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		status    types.Status
		eventType string
		o         Outcome
		hooks     []string
		events    []string
		log       string
	}{
		{"delivered", types.StatusSuccess, "a.b", Outcome{Attempted: true, Code: 200},
			[]string{"AttemptFinished", "DeliverySucceeded"}, nil, "level=DEBUG msg=\"webhooks: delivered\""},
		{"retry due", types.StatusPending, "a.b", Outcome{Attempted: true, Code: 500, Err: "HTTP 500"},
			[]string{"AttemptFinished"}, nil, "level=INFO msg=\"webhooks: attempt failed\""},
		{"failed for good", types.StatusFailed, "a.b", Outcome{Attempted: true, Code: 500, Err: "HTTP 500"},
			[]string{"AttemptFinished", "DeliveryFailed"}, []string{"delivery.failed@", "delivery.failed@acme"},
			"level=WARN msg=\"webhooks: delivery failed\""},
		{"an operational delivery failed", types.StatusFailed, types.EventDeliveryFailed, Outcome{Attempted: true, Code: 500},
			[]string{"AttemptFinished", "DeliveryFailed"}, nil, "level=WARN"},
		{"gone", types.StatusFailed, "a.b", Outcome{Attempted: true, Code: 410, Err: "HTTP 410", Disable: true},
			[]string{"AttemptFinished", "DeliveryFailed", "WebhookDisabled"},
			[]string{"delivery.failed@", "delivery.failed@acme", "webhook.disabled@", "webhook.disabled@acme"}, "webhook disabled"},
		{"not attempted", types.StatusPending, "a.b", Outcome{}, nil, nil, "level=INFO"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newScene(t)
			rec := &rdb.Record{Delivery: types.Delivery{ID: "dlv_1", WebhookID: "wh_1", EventID: "e1", EventType: c.eventType,
				Status: c.status, Attempts: 1, UpdatedAt: s.now}}
			s.n.Recorded(context.Background(), rec, c.o)
			assert.Equal(t, c.hooks, s.hooks)
			assert.Equal(t, c.events, s.eventTypes())
			assert.Contains(t, s.log.String(), c.log)
			assert.NotContains(t, s.log.String(), "pw", "no credentials logged")
			for _, e := range s.events {
				assert.Equal(t, "https://example.com/h", e.Data.(types.OperationalData).URL, "the URL without credentials")
			}
		})
	}
}

// TestAPanickingHookIsRecoveredAndLogged: a hook that panics does not take the worker down; the panic
// is logged, and the hooks after it still run.
func TestAPanickingHookIsRecoveredAndLogged(t *testing.T) {
	t.Parallel()
	s := newScene(t)
	s.n.Hooks.AttemptFinished = func(types.AttemptInfo) { panic("boom") }
	rec := &rdb.Record{Delivery: types.Delivery{ID: "dlv_1", WebhookID: "wh_1", Status: types.StatusSuccess}}
	require.NotPanics(t, func() { s.n.Recorded(context.Background(), rec, Outcome{Attempted: true, Code: 200}) })
	assert.Equal(t, []string{"DeliverySucceeded"}, s.hooks)
	assert.Contains(t, s.log.String(), "webhooks: hook panicked")
	assert.Contains(t, s.log.String(), "boom")
}

// TestCountedFollowsTheCircuit: a count that opened or closed the circuit runs its hook and sends its
// event (an opening keyed by its run of failures, so every replica's notice of it is one event); a run
// of failures sends webhook.failing once at half DisableAfter, and disables the webhook at
// DisableAfter, once.
func TestCountedFollowsTheCircuit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newScene(t)
	since := s.now.Add(-10 * time.Minute)
	open := types.Health{State: types.CircuitOpen, ConsecutiveFailures: 5, FailingSince: since, OpenUntil: s.now.Add(time.Minute)}
	s.n.Counted(ctx, "wh_1", breaker.Event{Health: open, Opened: true}, true, s.now)
	assert.Equal(t, []string{"CircuitOpened"}, s.hooks)
	require.Equal(t, []string{"circuit.opened@", "circuit.opened@acme"}, s.eventTypes())
	assert.True(t, strings.HasSuffix(s.events[0].ID, ":"+runKey(open)), "keyed by its run: %s", s.events[0].ID)

	s.hooks, s.events = nil, nil
	s.n.Counted(ctx, "wh_1", breaker.Event{Health: types.Health{State: types.CircuitClosed}, Closed: true}, false, s.now)
	assert.Equal(t, []string{"CircuitClosed"}, s.hooks)
	assert.Equal(t, []string{"circuit.closed@", "circuit.closed@acme"}, s.eventTypes())

	failing := types.Health{State: types.CircuitClosed, ConsecutiveFailures: 3, FailingSince: s.now.Add(-31 * time.Minute)}
	s.hooks, s.events = nil, nil
	for range 2 {
		s.n.Counted(ctx, "wh_1", breaker.Event{Health: failing}, true, s.now)
	}
	assert.Equal(t, []string{"webhook.failing@", "webhook.failing@acme"}, s.eventTypes(), "once per run, at half DisableAfter")
	assert.Empty(t, s.reg.disabled)

	s.now = s.now.Add(30 * time.Minute) // the run began DisableAfter ago
	s.hooks, s.events = nil, nil
	for range 2 {
		s.n.Counted(ctx, "wh_1", breaker.Event{Health: failing}, true, s.now)
	}
	assert.Equal(t, []string{"every attempt failed for 1h0m0s", "every attempt failed for 1h0m0s"}, s.reg.disabled)
	assert.Equal(t, []string{"WebhookDisabled"}, s.hooks, "the hook once: the second call found it disabled")
	assert.Equal(t, []string{"webhook.disabled@", "webhook.disabled@acme"}, s.eventTypes())
}
