package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hookLog records hook calls.
type hookLog struct {
	mu        sync.Mutex
	attempts  []AttemptInfo
	succeeded []Delivery
	failed    []Delivery
	disabled  []string
}

func (l *hookLog) hooks() Hooks {
	return Hooks{
		AttemptFinished: func(a AttemptInfo) { l.mu.Lock(); l.attempts = append(l.attempts, a); l.mu.Unlock() },
		DeliverySucceeded: func(d Delivery) {
			l.mu.Lock()
			l.succeeded = append(l.succeeded, d)
			l.mu.Unlock()
		},
		DeliveryFailed:  func(d Delivery) { l.mu.Lock(); l.failed = append(l.failed, d); l.mu.Unlock() },
		WebhookDisabled: func(id, reason string) { l.mu.Lock(); l.disabled = append(l.disabled, id); l.mu.Unlock() },
	}
}

func TestHooksSeeEveryAttemptOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	clock := newTestClock()
	var log hookLog
	d := newTestDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute}, Hooks: log.hooks()})
	d.now = clock.Now
	ok, bad := newReceiver(t), newReceiver(t)
	bad.status.Store(http.StatusInternalServerError)
	wOK := mustCreate(t, d, ok, "h")
	wBad := mustCreate(t, d, bad, "h")

	_, err := d.Dispatch(ctx, Event{Type: "h", ID: "h1"})
	require.NoError(t, err)
	_, err = d.Dispatch(ctx, Event{Type: "h", ID: "h1"}) // a duplicate: no attempt, no hook
	require.NoError(t, err)
	clock.Advance(2 * time.Minute)
	_, err = d.ProcessDue(ctx)
	require.NoError(t, err)

	log.mu.Lock()
	defer log.mu.Unlock()
	require.Len(t, log.attempts, 3, "two first attempts and one retry")
	codes := map[string][]int{}
	for _, a := range log.attempts {
		codes[a.Delivery.WebhookID] = append(codes[a.Delivery.WebhookID], a.StatusCode)
		if a.StatusCode == 500 {
			assert.Equal(t, "HTTP 500", a.Error)
		}
	}
	assert.Equal(t, []int{200}, codes[wOK.ID])
	assert.Equal(t, []int{500, 500}, codes[wBad.ID])
	require.Len(t, log.succeeded, 1)
	assert.Equal(t, wOK.ID, log.succeeded[0].WebhookID)
	require.Len(t, log.failed, 1, "failed for good once its schedule ran out")
	assert.Equal(t, wBad.ID, log.failed[0].WebhookID)
	assert.Equal(t, 2, log.failed[0].Attempts)
	assert.Empty(t, log.disabled)
}

func TestPanickingHookDoesNotBreakDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	var logs bytes.Buffer
	d := newTestDispatcher(t, tr, Options{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Hooks: Hooks{
			AttemptFinished:   func(AttemptInfo) { panic("boom") },
			DeliverySucceeded: func(Delivery) { panic("boom again") },
		},
	})
	rc := newReceiver(t)
	w := mustCreate(t, d, rc, "p")
	res, err := d.Dispatch(ctx, Event{Type: "p", ID: "p1"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	assert.Equal(t, StatusSuccess, res[0].Delivery.Status)
	stored, err := d.Deliveries().Find(ctx, w.ID, "p1")
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, stored.Status)
	assert.Contains(t, logs.String(), "hook panicked")
	assert.NotContains(t, logs.String(), w.Secret, "secrets never reach the logs")
}

// TestAutoDisable: a webhook whose deliveries all fail for DisableAfter is disabled; one whose run of
// failures is broken by a success is not.
func TestAutoDisable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	clock := newTestClock()
	var log hookLog
	d := newTestDispatcher(t, tr, Options{
		RetrySchedule: []time.Duration{30 * time.Minute, 30 * time.Minute, 30 * time.Minute},
		DisableAfter:  time.Hour,
		Hooks:         log.hooks(),
	})
	d.now = clock.Now
	dead, flaky := newReceiver(t), newReceiver(t)
	dead.status.Store(http.StatusInternalServerError)
	flaky.status.Store(http.StatusInternalServerError)
	wDead := mustCreate(t, d, dead, "dead")
	wFlaky := mustCreate(t, d, flaky, "flaky")

	for _, typ := range []string{"dead", "flaky"} {
		_, err := d.Dispatch(ctx, Event{Type: typ, ID: typ + "-1"})
		require.NoError(t, err)
	}
	step := func() {
		clock.Advance(40 * time.Minute)
		_, err := d.ProcessDue(ctx)
		require.NoError(t, err)
	}
	step() // t0+40m: both fail again
	flaky.status.Store(http.StatusOK)
	_, err := d.Dispatch(ctx, Event{Type: "flaky", ID: "flaky-2"}) // a success resets the flaky clock
	require.NoError(t, err)
	flaky.status.Store(http.StatusInternalServerError)
	step() // t0+80m: dead has failed for 80m → disabled; flaky has not succeeded for only 40m

	got, err := d.Webhooks().Get(ctx, wDead.ID)
	require.NoError(t, err)
	assert.True(t, got.Disabled, "failing for DisableAfter disables the webhook")
	got, err = d.Webhooks().Get(ctx, wFlaky.ID)
	require.NoError(t, err)
	assert.False(t, got.Disabled, "a success in between resets the clock")
	log.mu.Lock()
	assert.Equal(t, []string{wDead.ID}, log.disabled, "the hook hears of it once")
	log.mu.Unlock()

	res, err := d.Dispatch(ctx, Event{Type: "dead", ID: "dead-2"})
	require.NoError(t, err)
	assert.Empty(t, res, "a disabled webhook is not a target")
}

// TestLogsCarryIDsAndNoSecrets: outcome logs name the delivery, webhook, event and attempt, and
// never show the secret or the body.
func TestLogsCarryIDsAndNoSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	var logs bytes.Buffer
	d := newTestDispatcher(t, tr, Options{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	w := mustCreate(t, d, rc, "l")
	res, err := d.Dispatch(ctx, Event{Type: "l", ID: "log-1", Data: map[string]string{"card": "4111-secret-payload"}})
	require.NoError(t, err)
	var entry map[string]any
	require.NoError(t, json.Unmarshal(logs.Bytes(), &entry), "one JSON log line: %s", logs.String())
	assert.Equal(t, "INFO", entry["level"])
	assert.Equal(t, res[0].Delivery.ID, entry["delivery_id"])
	assert.Equal(t, w.ID, entry["webhook_id"])
	assert.Equal(t, "log-1", entry["event_id"])
	assert.Equal(t, float64(1), entry["attempt"])
	assert.Equal(t, float64(500), entry["status_code"])
	assert.NotContains(t, logs.String(), strings.TrimPrefix(w.Secret, "whsec_"))
	assert.NotContains(t, logs.String(), "4111-secret-payload")
}

// TestCircuitKeepsNothingForHealthyWebhooks: auto-disable keeps no per-shard state: a webhook's run of
// failures lives in its circuit's field alone, which a success removes, so a healthy webhook leaves no
// field and the shards no health hash.
func TestCircuitKeepsNothingForHealthyWebhooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	w := mustCreate(t, d, rc, "x")
	rc.status.Store(http.StatusBadRequest)
	_, err := d.Dispatch(ctx, Event{Type: "x", ID: "rejected"})
	require.NoError(t, err)
	h, err := d.Webhooks().Health(ctx, w.ID)
	require.NoError(t, err)
	assert.False(t, h.FailingSince.IsZero(), "a rejected attempt starts the run of failures")
	assert.Zero(t, h.ConsecutiveFailures, "a 4xx does not count towards BreakAfter")
	rc.status.Store(http.StatusOK)
	_, err = d.Dispatch(ctx, Event{Type: "x", ID: "ok"})
	require.NoError(t, err)
	assert.False(t, tr.rdb.HExists(ctx, d.keys.Circuits(), w.ID).Val(), "a success removes the circuit's field")
	keys, err := tr.rdb.Keys(ctx, "*"+tr.prefix+"*health*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "no health hash")
}

// TestAttemptOutcome: the outcome telemetry labels an attempt with.
func TestAttemptOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code int
		err  string
		want string
	}{
		{200, "", OutcomeSuccess},
		{204, "", OutcomeSuccess},
		{200, "body read failed", OutcomeHTTPError},
		{302, "redirect not followed", OutcomeHTTPError},
		{500, "HTTP 500", OutcomeHTTPError},
		{0, "timeout", OutcomeError},
		{0, "", OutcomeSuccess}, // a broker's confirm: no status
		{0, "no queue is bound", OutcomeError},
	} {
		assert.Equal(t, tc.want, AttemptOutcome(tc.code, tc.err), "%d %q", tc.code, tc.err)
	}
}

// TestEnablingAgainClearsTheFailureClock: a webhook disabled for failing DisableAfter and enabled
// again starts with a closed circuit and no run of failures: its next failed attempt does not disable
// it again at once (the run began before it was disabled), and its Health says so.
func TestEnablingAgainClearsTheFailureClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{
		RetrySchedule: []time.Duration{30 * time.Minute, 30 * time.Minute, 30 * time.Minute},
		DisableAfter:  time.Hour, BreakAfter: -1, // the breaker off: the run of failures is still kept for DisableAfter
	})
	dead := newReceiver(t)
	dead.status.Store(http.StatusInternalServerError)
	w := mustCreate(t, d, dead, "dead")
	_, err := d.Dispatch(ctx, Event{Type: "dead", ID: "dead-1"})
	require.NoError(t, err)
	for range 2 {
		clock.Advance(40 * time.Minute)
		_, err := d.ProcessDue(ctx)
		require.NoError(t, err)
	}
	got, err := d.Webhooks().Get(ctx, w.ID)
	require.NoError(t, err)
	require.True(t, got.Disabled, "failing for DisableAfter disables the webhook")

	got.Disabled = false
	_, err = d.Webhooks().Update(ctx, *got)
	require.NoError(t, err)
	h, err := d.Webhooks().Health(ctx, w.ID)
	require.NoError(t, err)
	assert.Equal(t, CircuitClosed, h.State, "enabled again: the circuit is closed")
	assert.Zero(t, h.ConsecutiveFailures)
	assert.True(t, h.FailingSince.IsZero(), "enabled again: no run of failures")

	clock.Advance(time.Second)
	_, err = d.Dispatch(ctx, Event{Type: "dead", ID: "dead-2"}) // one more failure
	require.NoError(t, err)
	got, err = d.Webhooks().Get(ctx, w.ID)
	require.NoError(t, err)
	assert.False(t, got.Disabled, "one failure after enabling does not disable it again")
}

// TestDisabledWebhookSaysWhy: a disabled webhook says why and since when, in its JSON too: the rule
// that disabled it (failing for DisableAfter, a 410), the reason a caller gave, or "disabled by an
// operator"; enabling it clears both.
func TestDisabledWebhookSaysWhy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{
		RetrySchedule: []time.Duration{30 * time.Minute, 30 * time.Minute, 30 * time.Minute},
		DisableAfter:  time.Hour, BreakAfter: -1,
	})
	dead, gone, fine := newReceiver(t), newReceiver(t), newReceiver(t)
	dead.status.Store(http.StatusInternalServerError)
	gone.status.Store(http.StatusGone)
	wDead, wGone, wFine := mustCreate(t, d, dead, "dead"), mustCreate(t, d, gone, "gone"), mustCreate(t, d, fine, "fine")
	for _, typ := range []string{"dead", "gone"} {
		_, err := d.Dispatch(ctx, Event{Type: typ, ID: typ + "-1"})
		require.NoError(t, err)
	}
	for range 2 {
		clock.Advance(40 * time.Minute)
		_, err := d.ProcessDue(ctx)
		require.NoError(t, err)
	}
	reason := func(id string) (string, time.Time, bool) {
		t.Helper()
		w, err := d.Webhooks().Get(ctx, id)
		require.NoError(t, err)
		return w.DisabledReason, w.DisabledAt, w.Disabled
	}
	why, at, disabled := reason(wDead.ID)
	require.True(t, disabled)
	assert.Contains(t, why, "every attempt failed for 1h0m0s")
	assert.False(t, at.IsZero())
	why, _, disabled = reason(wGone.ID)
	require.True(t, disabled)
	assert.Contains(t, why, "410 Gone")

	w, err := d.Webhooks().Get(ctx, wFine.ID)
	require.NoError(t, err)
	w.Disabled = true
	_, err = d.Webhooks().Update(ctx, *w)
	require.NoError(t, err)
	why, at, _ = reason(wFine.ID)
	assert.Equal(t, "disabled by an operator", why)
	assert.Equal(t, clock.Now().UTC().Truncate(time.Millisecond), at)

	rec := call(d.Handler(), "GET", "/webhooks/"+wDead.ID, "")
	assert.Contains(t, rec.Body.String(), `"disabled_reason":"every attempt failed for 1h0m0s"`)
	assert.Contains(t, rec.Body.String(), `"disabled_at":"`)

	w.Disabled, w.DisabledReason = false, ""
	_, err = d.Webhooks().Update(ctx, *w)
	require.NoError(t, err)
	why, at, disabled = reason(wFine.ID)
	assert.False(t, disabled)
	assert.Empty(t, why, "enabled: no reason")
	assert.True(t, at.IsZero(), "enabled: no time")
}
