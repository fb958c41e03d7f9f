package webhookstest_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/webhookstest"
)

// recordingTB is a testing.TB whose failures are recorded, not reported: the helpers' own tests check
// that they fail when they should. Fatalf ends the goroutine, as testing's does.
type recordingTB struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// failures runs f with a recordingTB in a goroutine of its own and returns what it failed with.
func failures(t *testing.T, f func(tb testing.TB)) []string {
	t.Helper()
	tb := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(tb)
	}()
	select {
	case <-done:
	case <-time.After(within):
		t.Fatal("helper did not return")
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.failures
}

func TestReceivedOnce(t *testing.T) {
	t.Parallel()
	s := hmacSigner(t, secret)
	tests := []struct {
		name  string
		key   string
		posts []string // event ids
		fails string   // "" when ReceivedOnce("evt_1") passes
	}{
		{"once", secret, []string{"evt_1", "evt_2"}, ""},
		{"never", secret, []string{"evt_2"}, `event "evt_1" was not received`},
		{"twice", secret, []string{"evt_1", "evt_1"}, `event "evt_1" was received 2 times`},
		{"unverified", "", []string{"evt_1"}, `event "evt_1" was received once, unverified`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := webhookstest.Start(t)
			if tc.key != "" {
				rc.SetKey(tc.key)
			}
			for i, id := range tc.posts {
				post(t, rc, s, fmt.Sprint("d", i), id, time.Now(), within)
			}
			var got webhookstest.Request
			fs := failures(t, func(tb testing.TB) { got = rc.ReceivedOnce(tb, "evt_1") })
			if tc.fails == "" {
				assert.Empty(t, fs)
				assert.Equal(t, "evt_1", got.EventID)
				assert.True(t, got.Verified)
				return
			}
			require.Len(t, fs, 1)
			assert.Contains(t, fs[0], tc.fails)
		})
	}
}

func TestWaitForFailsWhenNothingComes(t *testing.T) {
	t.Parallel()
	rc := webhookstest.Start(t)
	fs := failures(t, func(tb testing.TB) { rc.WaitForEvent(tb, "evt_1", 50*time.Millisecond) })
	require.Len(t, fs, 1)
	assert.Contains(t, fs[0], `not within 50ms: a verified request of event "evt_1" answered 2xx; received nothing`)
}

func TestAllVerified(t *testing.T) {
	t.Parallel()
	rc := webhookstest.Start(t)
	s := hmacSigner(t, secret)
	post(t, rc, s, "d1", "evt_1", time.Now(), within) // no key yet: unverified
	rc.SetKey(secret)
	post(t, rc, s, "d2", "evt_2", time.Now(), within)
	fs := failures(t, func(tb testing.TB) { rc.AllVerified(tb) })
	require.Len(t, fs, 1)
	assert.Contains(t, fs[0], "request d1")
}

// newDispatcher is a Dispatcher on an embedded miniredis, its retries 20ms apart.
func newDispatcher(t *testing.T) *webhooks.Dispatcher {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	d, err := webhooks.New(rdb, webhooks.Options{AllowPrivateNetworks: true, Timeout: 2 * time.Second,
		RetrySchedule: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}})
	require.NoError(t, err)
	return d
}

// runWorker runs d's worker until the test ends.
func runWorker(t *testing.T, d *webhooks.Dispatcher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestThroughTheLibrary checks the Receiver against the library's own requests: v1 and v1a, retries
// counted per delivery, a 410 that disables the webhook.
func TestThroughTheLibrary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDispatcher(t)
	runWorker(t, d)
	for _, asymmetric := range []bool{false, true} {
		rc := webhookstest.Start(t)
		wh, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: rc.URL(), Events: []string{"order.*"}, Asymmetric: asymmetric})
		require.NoError(t, err)
		rc.SetKeyOf(wh)
		rc.Answer(webhookstest.FailTimes(2, http.StatusServiceUnavailable))
		id := fmt.Sprint("order-", asymmetric)
		_, err = d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: id, Data: map[string]int{"total": 12}})
		require.NoError(t, err)
		got := rc.WaitForEvent(t, id, within)
		assert.Equal(t, 3, got.Attempt, "asymmetric %t: two failures, then success", asymmetric)
		assert.JSONEq(t, `{"total":12}`, string(got.Data))
		assert.Len(t, rc.Received(id), 3)
		rc.AllVerified(t)
	}

	rc := webhookstest.Start(t)
	wh, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: rc.URL(), Events: []string{"order.*"}})
	require.NoError(t, err)
	rc.SetKeyOf(wh)
	rc.Answer(webhookstest.Gone())
	_, err = d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "order-gone"})
	require.NoError(t, err)
	assert.Equal(t, http.StatusGone, rc.ReceivedOnce(t, "order-gone").Status)
	got, err := d.Webhooks().Get(ctx, wh.ID)
	require.NoError(t, err)
	assert.True(t, got.Disabled, "a 410 disables the webhook")
}
