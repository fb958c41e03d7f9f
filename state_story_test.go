package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stateAnswers are the admin API's answers about one webhook at one moment: the webhook itself, its
// entry in GET /webhooks, its health and counts, and each of its deliveries three ways (GET
// /deliveries/{id}, its webhook's listing, the search across webhooks).
type stateAnswers struct {
	webhook, listed, health, counts map[string]any
	detail, page, search            map[string]map[string]any // by delivery id
}

// TestStateStoryAnswersAgree drives the demo's failing-endpoint story through Handler on a clock the
// test moves: an endpoint that answers 503 is paused by its circuit after 3 failures (its other
// deliveries parked), stays paused through a failed probe, is disabled by DisableAfter at its next failed
// probe and its deliveries fail, is enabled again and Recover-ed, and succeeds. At each step no two
// answers contradict each other: the webhook, its list entry, its health and counts agree on its
// state (active; paused: after how many failures, until when; disabled: why, since when), the failure
// count is the failed attempts the deliveries' histories show since the run began, each delivery is
// the same in its detail, its webhook's listing and the search, a pending delivery of a paused or
// disabled endpoint shows no next attempt in the past (none at all while disabled; not before the
// next probe while paused) and says why it waits, and one never attempted says so and why.
func TestStateStoryAnswersAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute, time.Minute, time.Minute, time.Minute, time.Minute},
		BreakAfter: 3, BreakFor: time.Minute, DisableAfter: 10 * time.Minute})
	rc := newReceiver(t)
	rc.status.Store(http.StatusServiceUnavailable)
	w := mustCreate(t, d, rc, "invoice.*")
	h := d.Handler()
	send := func(method, path, body string) map[string]any {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, rec.Code, "%s %s: %s", method, path, rec.Body.String())
		var out map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
		return out
	}
	byID := func(list any) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, v := range list.([]any) {
			m := v.(map[string]any)
			out[m["id"].(string)] = m
		}
		return out
	}
	read := func() stateAnswers {
		t.Helper()
		a := stateAnswers{webhook: send("GET", "/webhooks/"+w.ID, ""), health: send("GET", "/webhooks/"+w.ID+"/health", ""),
			counts: send("GET", "/webhooks/"+w.ID+"/counts", ""), detail: map[string]map[string]any{}}
		a.listed = byID(send("GET", "/webhooks", "")["webhooks"])[w.ID]
		a.page = byID(send("GET", "/webhooks/"+w.ID+"/deliveries?limit=500", "")["deliveries"])
		a.search = byID(send("GET", "/deliveries?limit=500", "")["deliveries"])
		for id := range a.page {
			a.detail[id] = send("GET", "/deliveries/"+id, "")
		}
		return a
	}
	at := func(m map[string]any, field string) time.Time {
		s, _ := m[field].(string)
		if s == "" {
			return time.Time{}
		}
		v, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err, field)
		return v
	}
	// check reads every answer and checks that they agree, the webhook being in state (active, paused
	// or disabled).
	check := func(step, state string) stateAnswers {
		t.Helper()
		a := read()
		now := clock.Now()
		for _, f := range []string{"disabled", "disabled_reason", "disabled_at"} {
			assert.Equal(t, a.webhook[f], a.listed[f], "%s: GET /webhooks/{id} and GET /webhooks agree on %s", step, f)
		}
		require.Len(t, a.page, 5, step)
		pending, failed, failedAttempts := 0, 0, 0
		failingSince := at(a.health, "failing_since")
		for id, dl := range a.detail {
			for _, f := range []string{"status", "attempts", "next_attempt_at", "last_status_code", "last_error", "why"} {
				assert.Equal(t, dl[f], a.page[id][f], "%s: %s in the detail and the webhook's listing of %s", step, f, id)
				assert.Equal(t, dl[f], a.search[id][f], "%s: %s in the detail and the search of %s", step, f, id)
			}
			why, _ := dl["why"].(string)
			next := at(dl, "next_attempt_at")
			switch dl["status"] {
			case string(StatusPending):
				pending++
				if dl["attempts"].(float64) == 0 {
					assert.NotEmpty(t, why, "%s: %s, pending and never attempted, says why", step, id)
				}
				switch state {
				case "paused":
					assert.False(t, next.Before(at(a.health, "open_until")), "%s: %s is not attempted before the next probe (%s)", step, id, dl["next_attempt_at"])
					assert.Contains(t, why, "paused", "%s: %s says why it waits", step, id)
				case "disabled":
					assert.True(t, next.IsZero(), "%s: %s of a disabled endpoint shows no next attempt (%s)", step, id, dl["next_attempt_at"])
					assert.Contains(t, why, "disabled", "%s: %s says why it will not be attempted", step, id)
				default:
					assert.NotContains(t, why, "paused", step)
					assert.NotContains(t, why, "disabled", step)
				}
			case string(StatusFailed):
				failed++
				assert.True(t, next.IsZero(), step)
				if dl["attempts"].(float64) == 0 {
					assert.True(t, strings.HasPrefix(why, "never attempted: ") && len(why) > len("never attempted: "),
						"%s: %s failed without an attempt, and says so and why: %q", step, id, why)
				}
			}
			hist, _ := dl["history"].([]any) // absent: no attempt
			for _, att := range hist {
				if m := att.(map[string]any); m["error"] != nil && !failingSince.IsZero() && !at(m, "at").Before(failingSince) {
					failedAttempts++
				}
			}
		}
		assert.EqualValues(t, pending, a.counts["pending"], "%s: the counts' pending are the pending deliveries", step)
		assert.EqualValues(t, failed, a.counts["failed"], "%s: the counts' failed are the failed deliveries", step)
		assert.EqualValues(t, failedAttempts, a.health["consecutive_failures"],
			"%s: the health's failures are the failed attempts the deliveries show since %s", step, a.health["failing_since"])
		switch state {
		case "active":
			assert.Equal(t, false, a.webhook["disabled"], step)
			assert.Nil(t, a.webhook["disabled_reason"], step)
			assert.Equal(t, string(CircuitClosed), a.health["state"], step)
			assert.Zero(t, a.counts["parked"], step)
		case "paused":
			assert.Equal(t, false, a.webhook["disabled"], step)
			assert.Equal(t, string(CircuitOpen), a.health["state"], step)
			assert.True(t, at(a.health, "open_until").After(now), "%s: paused until a time to come", step)
			assert.GreaterOrEqual(t, a.health["consecutive_failures"], 3.0, step)
			assert.Positive(t, a.counts["parked"], step)
			assert.LessOrEqual(t, a.counts["parked"], a.counts["pending"], step)
		case "disabled":
			assert.Equal(t, true, a.webhook["disabled"], step)
			assert.Equal(t, "every attempt failed for 10m0s", a.webhook["disabled_reason"], step)
			assert.False(t, at(a.webhook, "disabled_at").After(now), step)
			assert.Equal(t, string(CircuitDisabled), a.health["state"], "%s: the health says disabled, not paused", step)
			assert.Nil(t, a.health["open_until"], "%s: no probe to come", step)
			assert.Zero(t, a.counts["parked"], "%s: nothing waits for a probe", step)
		}
		return a
	}
	disabled := func() bool {
		wh, err := d.Webhooks().Get(ctx, w.ID)
		require.NoError(t, err)
		return wh.Disabled
	}
	process := func() {
		for range 3 {
			_, err := d.ProcessDue(ctx)
			require.NoError(t, err)
		}
	}

	began := clock.Now()
	for i := range 5 {
		_, err := d.Dispatch(ctx, Event{Type: "invoice.paid", ID: fmt.Sprintf("inv_%03d", i)})
		require.NoError(t, err)
		clock.Advance(time.Second)
	}
	a := check("paused after 3 failures", "paused")
	assert.EqualValues(t, 3, a.health["consecutive_failures"])

	clock.Advance(at(a.health, "open_until").Sub(clock.Now()) + time.Second)
	process() // the probe fails: paused again, for twice as long
	require.False(t, disabled())
	a = check("paused after a failed probe", "paused")
	assert.EqualValues(t, 4, a.health["consecutive_failures"])

	for !disabled() {
		require.True(t, clock.Now().Before(began.Add(time.Hour)), "not disabled by DisableAfter")
		clock.Advance(30 * time.Second)
		process()
	}
	check("disabled by DisableAfter", "disabled")
	for range 4 {
		clock.Advance(30 * time.Second)
		process() // the deliveries fail, not attempted
	}
	a = check("disabled, its deliveries failed", "disabled")
	assert.EqualValues(t, 5, a.counts["failed"])

	rc.status.Store(http.StatusOK)
	send("PATCH", "/webhooks/"+w.ID, `{"disabled":false}`)
	check("enabled again", "active")
	recovered := send("POST", "/webhooks/"+w.ID+"/recover?since="+began.Add(-time.Minute).UTC().Format(time.RFC3339), "")
	assert.EqualValues(t, 5, recovered["redelivered"])
	a = check("recovered", "active")
	assert.Zero(t, a.counts["failed"], "recovered: none failed any more")
	clock.Advance(time.Second)
	process()
	a = check("delivered", "active")
	for id, dl := range a.detail {
		assert.Equal(t, string(StatusSuccess), dl["status"], id)
	}
}

// TestHealthSaysWhyTheCircuitOpened: a webhook's health answer (GET /webhooks/{id}/health) says in
// words the newest failure its circuit counted: the status the endpoint answered, a timeout, a
// refused connection; an earlier 4xx, which the circuit does not count, is not the reason.
func TestHealthSaysWhyTheCircuitOpened(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: connections are refused. (A closed test server's port was taken by
	// another test's server in a loaded CI run, which answered.)
	const refusedURL = "http://127.0.0.1:1"
	for _, tc := range []struct {
		name    string
		setup   func(rc *receiver) string // the webhook's URL, the receiver set to fail
		timeout time.Duration             // Options.Timeout of the replica that makes the failing attempts
		want    string
	}{
		{"503", func(rc *receiver) string { rc.status.Store(http.StatusServiceUnavailable); return rc.srv.URL },
			time.Minute, "the endpoint answered 503 Service Unavailable"},
		{"timeout", func(rc *receiver) string {
			rc.setHook(func(r *http.Request) {
				select { // until the attempt gives up and closes the connection (bounded)
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			})
			return rc.srv.URL
		}, 200 * time.Millisecond, "no answer within the timeout"},
		{"refused", func(*receiver) string { return refusedURL }, time.Minute, "the connection to 127.0.0.1:1 was refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			// Two replicas on the same Redis: the 4xx is answered to one whose Timeout no loaded
			// machine reaches (with 200ms, a CI run's 404 once came too late and was counted as a
			// timeout, opening the circuit one failure early); the failures go through the other.
			// Their clocks stand still: however slow the machine, a claim leaves the whole lease to
			// its inline attempt, so each is made.
			first := newTestDispatcher(t, tr, Options{BreakAfter: 2, RetrySchedule: []time.Duration{}, Timeout: time.Minute})
			first.now = newTestClock().Now
			d := newTestDispatcher(t, tr, Options{BreakAfter: 2, RetrySchedule: []time.Duration{}, Timeout: tc.timeout})
			d.now = newTestClock().Now
			rc := newReceiver(t)
			rc.status.Store(http.StatusNotFound) // first a 4xx: in the run, not in the count
			w, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"a.*"}})
			require.NoError(t, err)
			dispatch := func(d *Dispatcher, id string) *Delivery {
				res, err := d.Dispatch(ctx, Event{ID: id, Type: "a.b"})
				require.NoError(t, err)
				require.Len(t, res, 1)
				require.NoError(t, res[0].Err, "%s attempted inline", id)
				return res[0].Delivery
			}
			e0 := dispatch(first, "e0")
			require.Len(t, e0.History, 1)
			require.Equal(t, http.StatusNotFound, e0.History[0].StatusCode, "the 4xx the test starts with")
			w.URL = tc.setup(rc)
			_, err = d.Webhooks().Update(ctx, *w)
			require.NoError(t, err)
			dispatch(d, "e1")
			dispatch(d, "e2")
			rec := call(d.Handler(), "GET", "/webhooks/"+w.ID+"/health", "")
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			var h map[string]any
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &h))
			assert.Equal(t, "open", h["state"], "two failures open the circuit: %s", rec.Body.String())
			assert.Equal(t, tc.want, h["last_failure"], "why: %s", rec.Body.String())
		})
	}
}
