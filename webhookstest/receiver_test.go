package webhookstest_test

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/webhookstest"
)

// within bounds every wait of these tests.
const within = 10 * time.Second

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// signer signs requests by hand, as the Standard Webhooks specification says, so the Receiver's
// checks are tested apart from the library's signing.
type signer struct {
	hmacKey []byte
	edKey   ed25519.PrivateKey
}

func (s signer) sign(id string, ts int64, body string) string {
	content := id + "." + strconv.FormatInt(ts, 10) + "." + body
	if s.edKey != nil {
		return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(s.edKey, []byte(content)))
	}
	mac := hmac.New(sha256.New, s.hmacKey)
	mac.Write([]byte(content))
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func hmacSigner(t *testing.T, secret string) signer {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	return signer{hmacKey: key}
}

// edSigner returns a v1a signer and its whpk_ public key.
func edSigner(t *testing.T) (signer, string) {
	sk, pk, err := webhooks.NewEd25519Key()
	require.NoError(t, err)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sk, "whsk_"))
	require.NoError(t, err)
	return signer{edKey: ed25519.PrivateKey(raw)}, pk
}

// post sends one Standard Webhooks request for eventID to rc and returns its status (0 when the
// client gave up: timeout).
func post(t *testing.T, rc *webhookstest.Receiver, s signer, deliveryID, eventID string, ts time.Time, timeout time.Duration) int {
	t.Helper()
	body := fmt.Sprintf(`{"id":%q,"type":"order.paid","timestamp":"2026-01-02T03:04:05Z","data":{"n":1}}`, eventID)
	req, err := http.NewRequest(http.MethodPost, rc.URL(), strings.NewReader(body))
	if err != nil { // Errorf, not FailNow: post runs in goroutines too
		t.Errorf("request: %v", err)
		return 0
	}
	req.Header.Set("webhook-id", deliveryID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("webhook-signature", s.sign(deliveryID, ts.Unix(), body))
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestReceiverVerifies(t *testing.T) {
	t.Parallel()
	ed, pub := edSigner(t)
	_, otherPub := edSigner(t)
	right := hmacSigner(t, secret)
	wrong := hmacSigner(t, "whsec_"+base64.StdEncoding.EncodeToString([]byte("another key of 32 bytes, or so.")))
	now := time.Now()
	tests := []struct {
		name     string
		keys     []string
		s        signer
		ts       time.Time
		status   int
		verified bool
		err      error
	}{
		{"v1 with its secret", []string{secret}, right, now, 200, true, nil},
		{"v1 with another secret", []string{secret}, wrong, now, 401, false, webhooks.ErrInvalidSignature},
		{"v1 too old", []string{secret}, right, now.Add(-time.Hour), 401, false, webhooks.ErrInvalidTimestamp},
		{"v1a with its public key", []string{pub}, ed, now, 200, true, nil},
		{"v1a with another public key", []string{otherPub}, ed, now, 401, false, webhooks.ErrInvalidSignature},
		{"v1a during a rotation", []string{secret, pub}, ed, now, 200, true, nil},
		{"no key: the script answers", nil, right, now, 200, false, webhookstest.ErrNoKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := webhookstest.Start(t)
			rc.SetKey(tc.keys...)
			assert.Equal(t, tc.status, post(t, rc, tc.s, "msg_1", "evt_1", tc.ts, within))
			got := rc.Requests()
			require.Len(t, got, 1)
			assert.Equal(t, tc.verified, got[0].Verified)
			assert.ErrorIs(t, got[0].VerifyErr, tc.err)
			assert.Equal(t, "msg_1", got[0].DeliveryID)
			assert.Equal(t, "evt_1", got[0].EventID)
			assert.Equal(t, "order.paid", got[0].Type)
			assert.JSONEq(t, `{"n":1}`, string(got[0].Data))
			assert.Equal(t, tc.status, got[0].Status)
		})
	}
}

func TestReceiverScripts(t *testing.T) {
	t.Parallel()
	retryAfter := func(webhookstest.Request) webhookstest.Answer {
		return webhookstest.Answer{Status: 429, Header: http.Header{"Retry-After": {"7"}}}
	}
	tests := []struct {
		name   string
		script webhookstest.Script
		ids    []string // the delivery id of each request, in turn
		want   []int
	}{
		{"succeed", webhookstest.Succeed(), []string{"a", "a"}, []int{200, 200}},
		{"always 500", webhookstest.Always(500), []string{"a", "b"}, []int{500, 500}},
		{"gone", webhookstest.Gone(), []string{"a"}, []int{410}},
		{"fail twice per delivery", webhookstest.FailTimes(2, 503), []string{"a", "b", "a", "a", "b", "b", "a"},
			[]int{503, 503, 503, 200, 503, 200, 200}},
		{"a script of the test's own", retryAfter, []string{"a"}, []int{429}},
	}
	s := hmacSigner(t, secret)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := webhookstest.Start(t)
			rc.SetKey(secret)
			rc.Answer(tc.script)
			var got []int
			for _, id := range tc.ids {
				got = append(got, post(t, rc, s, id, "evt_"+id, time.Now(), within))
			}
			assert.Equal(t, tc.want, got)
			for i, q := range rc.Requests() {
				assert.Equal(t, tc.want[i], q.Status, "request %d", i)
			}
		})
	}
}

func TestReceiverAttemptCountsPerDelivery(t *testing.T) {
	t.Parallel()
	rc := webhookstest.Start(t)
	rc.SetKey(secret)
	s := hmacSigner(t, secret)
	for _, id := range []string{"a", "b", "a", "a"} {
		post(t, rc, s, id, "evt", time.Now(), within)
	}
	var attempts []int
	for _, q := range rc.Requests() {
		attempts = append(attempts, q.Attempt)
	}
	assert.Equal(t, []int{1, 1, 2, 3}, attempts)
}

func TestReceiverHangsUntilReleased(t *testing.T) {
	t.Parallel()
	rc := webhookstest.Start(t)
	rc.SetKey(secret)
	rc.Answer(webhookstest.Hang())
	s := hmacSigner(t, secret)
	statuses := make([]int, 2)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Go(func() { statuses[i] = post(t, rc, s, fmt.Sprint("d", i), "evt", time.Now(), within) })
	}
	rc.WaitFor(t, within, func([]webhookstest.Request) bool { return rc.Hanging() == 2 }, "two requests hanging")
	for _, q := range rc.Requests() {
		assert.Zero(t, q.Status, "not answered while hanging")
	}
	rc.Answer(webhookstest.Succeed())
	rc.Release()
	wg.Wait()
	assert.Equal(t, []int{200, 200}, statuses)
	assert.Zero(t, rc.Hanging())
	assert.Equal(t, 200, post(t, rc, s, "d3", "evt", time.Now(), within), "after Answer, no more hanging")
}

func TestReceiverHangFor(t *testing.T) {
	t.Parallel()
	s := hmacSigner(t, secret)
	t.Run("answers after the delay", func(t *testing.T) {
		t.Parallel()
		rc := webhookstest.Start(t)
		rc.SetKey(secret)
		rc.Answer(webhookstest.HangFor(50 * time.Millisecond))
		start := time.Now()
		assert.Equal(t, 200, post(t, rc, s, "d", "evt", time.Now(), within))
		assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	})
	t.Run("a client that gives up is not answered", func(t *testing.T) {
		t.Parallel()
		rc := webhookstest.Start(t)
		rc.SetKey(secret)
		rc.Answer(webhookstest.HangFor(time.Hour))
		assert.Equal(t, 0, post(t, rc, s, "d", "evt", time.Now(), 100*time.Millisecond))
		rc.WaitFor(t, within, func([]webhookstest.Request) bool { return rc.Hanging() == 0 }, "the request ended")
		assert.Zero(t, rc.Requests()[0].Status)
	})
}

func TestReceiverCloseEndsHangingRequests(t *testing.T) {
	t.Parallel()
	rc := webhookstest.NewReceiver()
	rc.Answer(webhookstest.Hang())
	done := make(chan int, 1)
	s := hmacSigner(t, secret)
	// The client waits longer than the test does: only Close can end the request in time.
	go func() { done <- post(t, rc, s, "d", "evt", time.Now(), 3*within) }()
	rc.WaitFor(t, within, func([]webhookstest.Request) bool { return rc.Hanging() == 1 }, "hanging")
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		rc.Close()
		rc.Close() // again: nothing
	}()
	for _, ch := range []<-chan struct{}{awaitInt(done, t), closed} {
		select {
		case <-ch:
		case <-time.After(within):
			t.Fatal("Close left the request hanging")
		}
	}
}

// awaitInt closes its channel once one status has come from done, asserting it is 200 (released by
// Close, then answered).
func awaitInt(done <-chan int, t *testing.T) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		assert.Equal(t, http.StatusOK, <-done, "released by Close, then answered")
	}()
	return ch
}

func TestReceiverWaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	rc := webhookstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := rc.Wait(ctx, func(reqs []webhookstest.Request) bool { return len(reqs) > 0 })
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestReceiverConcurrentRequests: sixteen concurrent attempts of one delivery get sixteen distinct
// attempt numbers, so FailTimes fails exactly the first n of them, whatever the interleaving.
func TestReceiverConcurrentRequests(t *testing.T) {
	t.Parallel()
	rc := webhookstest.Start(t)
	rc.SetKey(secret)
	rc.Answer(webhookstest.FailTimes(3, http.StatusServiceUnavailable))
	s := hmacSigner(t, secret)
	const n = 16
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { statuses[i] = post(t, rc, s, "same", "evt", time.Now(), within) })
	}
	wg.Wait()
	var attempts []int
	failed := 0
	for _, q := range rc.Requests() {
		attempts = append(attempts, q.Attempt)
		if q.Status == http.StatusServiceUnavailable {
			failed++
			assert.LessOrEqual(t, q.Attempt, 3)
		}
	}
	slices.Sort(attempts)
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	assert.Equal(t, want, attempts)
	assert.Equal(t, 3, failed)
	slices.Sort(statuses) // what the clients got: 200s, then the three 503s
	assert.Equal(t, append(slices.Repeat([]int{200}, n-3), 503, 503, 503), statuses)
}
