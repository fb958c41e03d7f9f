// Package webhookstest is a test kit for services that send webhooks with
// github.com/smartdrop/webhooks: a Receiver, an HTTP endpoint on loopback that verifies each request's
// Standard Webhooks signature with the webhook's secret (whsec_, v1) or public key (whpk_, v1a),
// records it, and answers by a Script (succeed, fail N times, always one status, hang, 410 Gone).
// Helpers wait for and check what it received with a testing.TB:
//
//	rc := webhookstest.Start(t) // closed at the test's end
//	wh, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: rc.URL(), Events: []string{"order.*"}})
//	rc.SetKeyOf(wh) // verify with the webhook's secret, or its public key
//	_, err = d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "order-1"})
//	rc.ReceivedOnce(t, "order-1") // one request, and it verified
//
//	rc.Answer(webhookstest.FailTimes(2, http.StatusServiceUnavailable)) // each delivery: two 503s, then 200
//	_, err = d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "order-2"})
//	req := rc.WaitForEvent(t, "order-2", 10*time.Second) // the third attempt, made by Run: req.Attempt == 3
//
// The dispatcher must allow loopback addresses (Options.AllowPrivateNetworks, tests only). Use one
// Receiver per webhook: it counts requests by event id, whichever webhook sent them.
package webhookstest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/smartdrop/webhooks"
)

// MaxBody bounds the request body a Receiver reads and records.
const MaxBody = 4 << 20

// ErrNoKey is the Request.VerifyErr of a request received before any key was set (SetKey, SetKeyOf).
var ErrNoKey = errors.New("webhookstest: no key to verify with: call SetKey or SetKeyOf")

// Request is one request a Receiver received.
type Request struct {
	// DeliveryID is the webhook-id header: the delivery's id, the same for every attempt.
	DeliveryID string
	// EventID, Type, Timestamp and Data are the fields of the Standard Webhooks body; zero when the
	// body is not such JSON.
	EventID   string
	Type      string
	Timestamp time.Time
	Data      json.RawMessage
	// Body is the request body as received (at most MaxBody bytes), Header its headers.
	Body   []byte
	Header http.Header
	// Verified reports whether webhooks.Verify accepted the request with one of the Receiver's keys;
	// VerifyErr is why not (the last key's error, or ErrNoKey).
	Verified  bool
	VerifyErr error
	// Attempt counts the requests received with this DeliveryID, this one included (1 for the first).
	Attempt int
	// ReceivedAt is when the request arrived.
	ReceivedAt time.Time
	// Status is the status it was answered with; 0 while it is being answered (hanging), and for good
	// when the client gave up first (the dispatcher's timeout).
	Status int
}

// Succeeded reports whether the request verified and was answered with a 2xx status.
func (r Request) Succeeded() bool { return r.Verified && r.Status >= 200 && r.Status < 300 }

// Receiver is a webhook endpoint for tests (an httptest.Server on loopback). It is safe for
// concurrent use. Close it when done, or make it with Start, which closes it at the test's end.
type Receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	keys    []string
	script  Script
	reqs    []*Request
	changed chan struct{} // closed and replaced when a request arrives or is answered
	release chan struct{} // closed and replaced by Release
	hanging int
	closed  chan struct{}
	once    sync.Once
}

// NewReceiver starts a Receiver that answers every verified request 200 (Succeed) until Answer says
// otherwise. Close it when done.
func NewReceiver() *Receiver {
	r := &Receiver{script: Succeed(), changed: make(chan struct{}), release: make(chan struct{}), closed: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

// Start is NewReceiver for a test: tb's cleanup closes it.
func Start(tb testing.TB) *Receiver {
	tb.Helper()
	r := NewReceiver()
	tb.Cleanup(r.Close)
	return r
}

// URL is the Receiver's base URL; it accepts requests on any path.
func (r *Receiver) URL() string { return r.srv.URL }

// Close releases every hanging request and stops the server (waiting for the requests in flight).
// Calling it again does nothing.
func (r *Receiver) Close() {
	r.once.Do(func() {
		close(r.closed)
		r.srv.Close()
	})
}

// SetKey sets the keys requests are verified with: "whsec_" secrets (v1) or "whpk_" public keys
// (v1a); a request verifies if any of them accepts it (as during a rotation). A request that does not
// verify is answered 401 without consulting the script; before any key is set none verifies, and the
// script answers them all.
func (r *Receiver) SetKey(keys ...string) {
	r.mu.Lock()
	r.keys = append([]string(nil), keys...)
	r.mu.Unlock()
}

// SetKeyOf sets the key of a webhook as Create or RotateSecret returned it: its PublicKey when it has
// one (an ed25519 webhook), else its Secret.
func (r *Receiver) SetKeyOf(w *webhooks.Webhook) {
	if w.PublicKey != "" {
		r.SetKey(w.PublicKey)
		return
	}
	r.SetKey(w.Secret)
}

// Answer sets the script that answers the requests from now on.
func (r *Receiver) Answer(s Script) {
	r.mu.Lock()
	r.script = s
	r.mu.Unlock()
}

// Release answers every request hanging now (Hang) at once. A request that arrives later hangs
// again if the script says so: Answer another script first to stop hanging.
func (r *Receiver) Release() {
	r.mu.Lock()
	close(r.release)
	r.release = make(chan struct{})
	r.mu.Unlock()
}

// Hanging is the number of requests hanging now (until Release, or for Answer.Delay).
func (r *Receiver) Hanging() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hanging
}

// Requests returns every request received so far, in order of arrival.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Request, len(r.reqs))
	for i, q := range r.reqs {
		out[i] = *q
	}
	return out
}

// Received returns the requests received so far for one event id, in order of arrival.
func (r *Receiver) Received(eventID string) []Request {
	var out []Request
	for _, q := range r.Requests() {
		if q.EventID == eventID {
			out = append(out, q)
		}
	}
	return out
}

// Once returns the one request received for eventID, or an error when there is none, more than one,
// or it did not verify. It checks what was received so far: call it once the delivery is done (its
// Delivery succeeded, or WaitForEvent returned).
func (r *Receiver) Once(eventID string) (Request, error) {
	got := r.Received(eventID)
	switch {
	case len(got) == 0:
		return Request{}, fmt.Errorf("webhookstest: event %q was not received", eventID)
	case len(got) > 1:
		return got[0], fmt.Errorf("webhookstest: event %q was received %d times (delivery ids %v), not once", eventID, len(got), deliveryIDs(got))
	case !got[0].Verified:
		return got[0], fmt.Errorf("webhookstest: event %q was received once, unverified: %w", eventID, got[0].VerifyErr)
	}
	return got[0], nil
}

func deliveryIDs(reqs []Request) []string {
	ids := make([]string, len(reqs))
	for i, q := range reqs {
		ids[i] = q.DeliveryID
	}
	return ids
}

// serve records a request, verifies it, and answers it by the script.
func (r *Receiver) serve(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(hr.Body, MaxBody))
	q := &Request{DeliveryID: hr.Header.Get("webhook-id"), Body: body, Header: hr.Header.Clone(), ReceivedAt: time.Now()}
	var wire struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if json.Unmarshal(body, &wire) == nil {
		q.EventID, q.Type, q.Timestamp, q.Data = wire.ID, wire.Type, wire.Timestamp, wire.Data
	}
	r.mu.Lock()
	keys, script := r.keys, r.script
	r.mu.Unlock()
	q.Verified, q.VerifyErr = verify(keys, q.Header, body)
	r.mu.Lock()
	for _, p := range r.reqs { // numbered and recorded in one step, so concurrent attempts count right
		if p.DeliveryID == q.DeliveryID {
			q.Attempt++
		}
	}
	q.Attempt++
	r.reqs = append(r.reqs, q)
	r.notifyLocked()
	r.mu.Unlock()

	a := Answer{Status: http.StatusUnauthorized, Body: "signature does not verify"}
	if q.Verified || len(keys) == 0 {
		a = script(*q)
	}
	r.hang(hr, a)
	if hr.Context().Err() != nil {
		return // the client gave up: nothing is answered, Status stays 0
	}
	// Recorded before it is written, so a client that has its answer finds it recorded.
	r.mu.Lock()
	q.Status = a.status()
	r.notifyLocked()
	r.mu.Unlock()
	for k, vs := range a.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(a.status())
	_, _ = io.WriteString(w, a.Body)
}

// verify checks a request with each key until one accepts it.
func verify(keys []string, h http.Header, body []byte) (bool, error) {
	err := ErrNoKey
	for _, k := range keys {
		if err = webhooks.Verify(k, h, body); err == nil {
			return true, nil
		}
	}
	return false, err
}

// hang holds a request as the answer says: for Delay, or until Release; either ends early when the
// client gives up or the Receiver closes.
func (r *Receiver) hang(hr *http.Request, a Answer) {
	if a.Delay <= 0 && !a.UntilReleased {
		return
	}
	r.mu.Lock()
	r.hanging++
	release := r.release
	r.notifyLocked()
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.hanging--
		r.notifyLocked()
		r.mu.Unlock()
	}()
	var timeout <-chan time.Time
	if a.Delay > 0 {
		t := time.NewTimer(a.Delay)
		defer t.Stop()
		timeout = t.C
	}
	if !a.UntilReleased {
		release = nil
	}
	select {
	case <-timeout:
	case <-release:
	case <-hr.Context().Done():
	case <-r.closed:
	}
}

// notifyLocked wakes the waiters (r.mu held).
func (r *Receiver) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}
