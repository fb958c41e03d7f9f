package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMiniredisSaysNothingSurvives: with no -redis the binary runs on an embedded miniredis; its
// first log line and /readyz say that nothing survives a restart, it makes an operator key for the
// run (logged), and it takes and delivers events.
func TestMiniredisSaysNothingSurvives(t *testing.T) {
	t.Parallel()
	srv := startServer(t, []string{"-listen", "127.0.0.1:0", "-allow-private-networks"}, "WEBHOOKS_REDIS_URL=", "WEBHOOKS_API_KEY=")
	lines := srv.log()
	require.NotEmpty(t, lines)
	var first map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first), "the first line is JSON: %s", lines[0])
	assert.Equal(t, "WARN", first["level"])
	assert.Contains(t, first["msg"], "NOTHING SURVIVES A RESTART")
	assert.Contains(t, first["msg"], "-redis")

	keyLine, ok := srv.logged("webhooksd: no -api-key given")
	require.True(t, ok, "the run's key is logged")
	key, _ := keyLine["api_key"].(string)
	require.NotEmpty(t, key)
	a := newAPI(t, func() string { return "http://" + srv.addr }, key)
	status, h := readyStatus(a)
	assert.Equal(t, 200, status)
	assert.Equal(t, "ready", h.Status)
	assert.False(t, h.Persistent)
	assert.Contains(t, h.Warning, "NOTHING SURVIVES A RESTART")
	assert.Equal(t, "embedded miniredis", h.Redis)

	rc := newReceiver(t)
	_, secret := a.createWebhook(rc.url("all"), []string{"*"}, "")
	rc.setSecret("all", secret)
	a.must(202, "POST", "/v1/events", map[string]any{"id": "e1", "type": "order.created", "data": map[string]int{"n": 1}})
	waitFor(t, "delivered", func() (bool, int64) { n := rc.received([]string{"all/e1"}); return n == 1, int64(n) })
	assert.Empty(t, rc.badSignatures())
}

// TestBadSettingExits2: a bad value stops the binary before it serves, with exit code 2 and one
// line naming the flag (and its variable) and what to change; -help exits 0.
func TestBadSettingExits2(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		env  []string
		want []string // in the message
	}{
		{"timeout", []string{"-timeout", "soon"}, nil, []string{"-timeout (WEBHOOKS_TIMEOUT)", `"soon"`, "like 15s"}},
		{"env", nil, []string{"WEBHOOKS_CONCURRENCY=-3"}, []string{"-concurrency (WEBHOOKS_CONCURRENCY)", "whole number"}},
		{"redis url", []string{"-redis", "localhost:6379"}, nil, []string{"-redis (WEBHOOKS_REDIS_URL)", "redis://host:6379"}},
		{"no key with a redis", []string{"-redis", "redis://127.0.0.1:1"}, []string{"WEBHOOKS_API_KEY="}, []string{"-api-key (WEBHOOKS_API_KEY)", "required"}},
		{"short key", []string{"-api-key", "short"}, nil, []string{"-api-key (WEBHOOKS_API_KEY)", "at least 16"}},
		{"retention below the floor", []string{"-retention", "1h"}, nil, []string{"-retention (WEBHOOKS_RETENTION)", "shortest retention these settings allow", "-disable-after"}},
		{"destination not built in", []string{"-destinations", "http,sqs"}, nil, []string{"-destinations (WEBHOOKS_DESTINATIONS)", `"sqs"`, "built with"}},
		{"unknown flag", []string{"-verbose"}, nil, []string{"-verbose", "-help"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := launch(t, c.args, c.env...)
			assert.Equal(t, 2, p.wait())
			out := strings.Join(p.log(), "\n")
			for _, w := range c.want {
				assert.Contains(t, out, w)
			}
			_, served := p.logged("webhooksd: serving")
			assert.False(t, served)
		})
	}
	p := launch(t, []string{"-help"})
	assert.Equal(t, 0, p.wait())
	help := strings.Join(p.log(), "\n")
	for _, flag := range []string{"-redis  (WEBHOOKS_REDIS_URL)", "-redis-cluster", "-listen", "-api-key", "-allow-private-networks",
		"-portal-key", "-secret-keys", "-retention", "-concurrency", "-shards", "-replica-acks", "-timeout", "-key-prefix", "-destinations"} {
		assert.Contains(t, help, flag)
	}
}
