package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/testproxy"
)

// readyStatus is GET /readyz's status code and body.
func readyStatus(a *api) (int, healthAnswer) {
	status, body, _, err := a.do("GET", "/readyz", nil)
	var h healthAnswer
	if err != nil {
		return 0, h
	}
	_ = json.Unmarshal(body, &h)
	return status, h
}

type healthAnswer struct {
	Status     string `json:"status"`
	Redis      string `json:"redis"`
	Persistent bool   `json:"persistent"`
	Warning    string `json:"warning"`
	Error      string `json:"error"`
}

// untilReady polls /readyz until it answers want (at most 30 s) and returns how long that took.
func untilReady(t *testing.T, a *api, want int) time.Duration {
	t.Helper()
	began := time.Now()
	for {
		status, h := readyStatus(a)
		if status == want {
			return time.Since(began)
		}
		require.Less(t, time.Since(began), 30*time.Second, "/readyz still answers %d (%+v), not %d", status, h, want)
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReadyFollowsRedis: with Redis behind a TCP proxy the test takes down and up again, /readyz
// answers 503 within 2 s of Redis going away, saying what failed, and 200 within 2 s of its return;
// meanwhile ingest answers 503 with Retry-After, saying that sending again is safe, and the same
// events sent again once Redis answers are accepted and each delivered once.
func TestReadyFollowsRedis(t *testing.T) {
	t.Parallel()
	px, err := testproxy.Start(realRedis(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = px.Close() })
	srv := startServer(t, serverArgs(px.Addr(), "ready-"+randomHex(4), "-timeout", "2s"))
	a := newAPI(t, func() string { return "http://" + srv.addr }, testKey)
	rc := newReceiver(t)
	_, secret := a.createWebhook(rc.url("all"), []string{"*"}, "")
	rc.setSecret("all", secret)
	untilReady(t, a, 200)
	a.must(202, "POST", "/v1/events", map[string]any{"id": "before", "type": "order.created"})

	px.Down()
	assert.LessOrEqual(t, untilReady(t, a, 503), 2*time.Second, "/readyz 503 after Redis went away")
	_, h := readyStatus(a)
	assert.Equal(t, "unavailable", h.Status)
	assert.Contains(t, h.Error, "does not answer")

	var outage []string
	for i := range 10 {
		id := fmt.Sprintf("during-%d", i)
		outage = append(outage, "all/"+id)
		var body any = map[string]any{"id": id, "type": "order.created", "data": map[string]int{"n": i}}
		if i%2 == 1 {
			body = map[string]any{"events": []any{body}}
		}
		sent := time.Now()
		status, out, hdr, err := a.do("POST", "/v1/events", body)
		require.NoError(t, err)
		t.Logf("%s answered %d in %s", id, status, time.Since(sent).Round(time.Millisecond))
		assert.Equal(t, 503, status, "%s: %s", id, out)
		assert.Equal(t, "1", hdr.Get("Retry-After"))
		var ans ingestAnswer
		require.NoError(t, json.Unmarshal(out, &ans))
		require.NotNil(t, ans.Error)
		assert.Equal(t, "unavailable", ans.Error.Code)
		assert.Contains(t, ans.Error.Message, "Send the same request again: it is safe")
	}

	px.Up()
	assert.LessOrEqual(t, untilReady(t, a, 200), 2*time.Second, "/readyz 200 after Redis came back")
	for i := range 10 {
		var ans ingestAnswer
		require.NoError(t, json.Unmarshal(a.must(202, "POST", "/v1/events",
			map[string]any{"id": fmt.Sprintf("during-%d", i), "type": "order.created", "data": map[string]int{"n": i}}), &ans))
		assert.True(t, ans.Events[0].Accepted)
	}
	want := append(outage, "all/before")
	waitFor(t, "the events delivered", func() (bool, int64) {
		n := rc.received(want)
		return n == len(want), int64(n)
	})
	waitFor(t, "nothing left to send", func() (bool, int64) { return backlogEmpty(a) })
	got := rc.snapshot()
	for _, p := range want {
		assert.Len(t, got[p], 1, "%s received once", p)
	}
	assert.Empty(t, rc.badSignatures())
	assert.False(t, strings.Contains(strings.Join(srv.log(), "\n"), testKey), "the operator key is never logged")
}
