package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDispatchBlocksPrivateAddressesByDefault: with the guard on (the default), a webhook on loopback
// gets nothing, and the attempt records why.
func TestDispatchBlocksPrivateAddressesByDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	rc := newReceiver(t)
	open := newTestDispatcher(t, tr, Options{}) // the guard is off only to register the loopback URL
	w := mustCreate(t, open, rc, "g")
	d, err := New(tr.rdb, Options{KeyPrefix: tr.prefix, Timeout: 2 * time.Second})
	require.NoError(t, err)
	res, err := d.Dispatch(ctx, Event{Type: "g", ID: "guarded"})
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, w.ID, res[0].WebhookID)
	assert.Equal(t, StatusPending, res[0].Delivery.Status)
	assert.Contains(t, res[0].Delivery.LastError, "blocked address")
	assert.Equal(t, 0, rc.count(), "the loopback receiver got nothing")

	_, err = d.Webhooks().Create(ctx, Webhook{URL: "http://127.0.0.1:8080/x", Events: []string{"g"}})
	require.ErrorIs(t, err, ErrInvalidWebhook, "a literal blocked address is refused up front")
	_, err = d.Webhooks().Create(ctx, Webhook{URL: "http://[::ffff:169.254.169.254]/", Events: []string{"g"}})
	require.ErrorIs(t, err, ErrInvalidWebhook)
}

func TestRedirectIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	target := newReceiver(t)
	redirector := newReceiver(t)
	redirector.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.srv.URL+"/elsewhere", http.StatusFound)
	})
	mustCreate(t, d, redirector, "r")
	res, err := d.Dispatch(ctx, Event{Type: "r", ID: "redirected"})
	require.NoError(t, err)
	dl := res[0].Delivery
	assert.Equal(t, StatusPending, dl.Status, "a redirect is a failure")
	assert.Equal(t, http.StatusFound, dl.LastStatusCode)
	assert.Contains(t, dl.LastError, "/elsewhere", "the Location is recorded")
	assert.Equal(t, 0, target.count(), "the redirect target gets nothing")
}

// TestEndlessResponseBodyIsBounded: a subscriber that streams a body forever costs one bounded read.
func TestEndlessResponseBodyIsBounded(t *testing.T) {
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{Timeout: 2 * time.Second})
	stop := make(chan struct{})
	defer close(stop)
	endless := newReceiver(t)
	chunk := []byte(strings.Repeat("x", 32<<10))
	endless.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for i := 0; i < 1<<15; i++ { // up to 1 GiB, ended by the client hanging up
			select {
			case <-stop:
				return
			default:
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mustCreate(t, d, endless, "e")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	res, err := d.Dispatch(ctx, Event{Type: "e", ID: "endless"})
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	assert.Less(t, elapsed, d.opts.Timeout+500*time.Millisecond, "the attempt ends within its timeout")
	assert.Equal(t, StatusSuccess, res[0].Delivery.Status)
	require.Len(t, res[0].Delivery.History, 1)
	assert.Len(t, res[0].Delivery.History[0].Response, maxHistoryBody, "1 KiB of the body is kept")
	// The client reads at most 64 KiB; allow for the server's own buffers, Redis and HTTP machinery.
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "allocation stays bounded while the server streams without end")
}

// TestSlowSubscriberTimesOut: an attempt is cut at Options.Timeout and recorded as a failure.
func TestSlowSubscriberTimesOut(t *testing.T) {
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{Timeout: 300 * time.Millisecond})
	slow, fast := newReceiver(t), newReceiver(t)
	release := make(chan struct{})
	defer close(release)
	slow.setHook(func(*http.Request) {
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
	})
	wSlow := mustCreate(t, d, slow, "s")
	wFast := mustCreate(t, d, fast, "s")
	start := time.Now()
	res, err := d.Dispatch(ctx, Event{Type: "s", ID: "slow"})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)
	byID := map[string]*Delivery{}
	for _, r := range res {
		require.NoError(t, r.Err)
		byID[r.WebhookID] = r.Delivery
	}
	assert.Equal(t, StatusPending, byID[wSlow.ID].Status)
	assert.Contains(t, byID[wSlow.ID].LastError, "no answer within the timeout")
	assert.Equal(t, StatusSuccess, byID[wFast.ID].Status, "the slow subscriber does not hold back the fast one")
}

// TestSecretRotation: during the grace period requests carry both signatures and both secrets verify;
// after it, only the new one does.
func TestSecretRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	old := mustCreate(t, d, rc, "k")
	rotated, err := d.Webhooks().RotateSecret(ctx, old.ID, time.Hour)
	require.NoError(t, err)
	require.NotEqual(t, old.Secret, rotated.Secret)

	_, err = d.Dispatch(ctx, Event{Type: "k", ID: "during"})
	require.NoError(t, err)
	req := rc.requests()[0]
	assert.Len(t, strings.Fields(req.Header.Get("webhook-signature")), 2, "two signatures during the grace period")
	require.NoError(t, verifyAt(old.Secret, req.Header, req.Body, clock.Now()), "the old secret verifies")
	require.NoError(t, verifyAt(rotated.Secret, req.Header, req.Body, clock.Now()), "the new secret verifies")

	clock.Advance(time.Hour + time.Second)
	_, err = d.Dispatch(ctx, Event{Type: "k", ID: "after"})
	require.NoError(t, err)
	req = rc.requests()[1]
	assert.Len(t, strings.Fields(req.Header.Get("webhook-signature")), 1)
	require.ErrorIs(t, verifyAt(old.Secret, req.Header, req.Body, clock.Now()), ErrInvalidSignature, "the old secret no longer verifies")
	require.NoError(t, verifyAt(rotated.Secret, req.Header, req.Body, clock.Now()))

	_, err = d.Webhooks().RotateSecret(ctx, "wh_nope", time.Hour)
	require.ErrorIs(t, err, ErrNotFound)
}

// TestSecretsStayOutOfOutput: formatting a webhook, the JSON of a delivery and the errors of the
// library never show a secret.
func TestSecretsStayOutOfOutput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	w := mustCreate(t, d, rc, "s")
	for _, s := range []string{fmt.Sprint(w), fmt.Sprintf("%v %+v %#v %s", *w, *w, *w, w)} {
		assert.NotContains(t, s, w.Secret)
		assert.NotContains(t, s, strings.TrimPrefix(w.Secret, "whsec_"))
	}
	res, err := d.Dispatch(ctx, Event{Type: "s", ID: "x"})
	require.NoError(t, err)
	b, err := json.Marshal(res[0].Delivery)
	require.NoError(t, err)
	assert.NotContains(t, string(b), strings.TrimPrefix(w.Secret, "whsec_"))
	assert.NotContains(t, Verify(w.Secret, http.Header{}, nil).Error(), w.Secret)
}
