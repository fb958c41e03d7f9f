package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/egress"
	flt "github.com/smartdrop/webhooks/internal/filter"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storedBytes is what the test's keys hold in Redis: MEMORY USAGE summed over them on a real Redis,
// the sum of key, field and value lengths on miniredis (which has no MEMORY USAGE).
func storedBytes(t *testing.T, tr *testRedis) int64 {
	t.Helper()
	ctx := context.Background()
	var total int64
	for _, k := range tr.keys(t) {
		if tr.mini == nil {
			n, err := tr.rdb.MemoryUsage(ctx, k, 0).Result()
			require.NoError(t, err)
			total += n
			continue
		}
		total += int64(len(k))
		switch typ := tr.rdb.Type(ctx, k).Val(); typ {
		case "string":
			total += int64(len(tr.rdb.Get(ctx, k).Val()))
		case "hash":
			for f, v := range tr.rdb.HGetAll(ctx, k).Val() {
				total += int64(len(f) + len(v))
			}
		case "set":
			for _, m := range tr.rdb.SMembers(ctx, k).Val() {
				total += int64(len(m))
			}
		case "zset":
			for _, m := range tr.rdb.ZRange(ctx, k, 0, -1).Val() {
				total += int64(len(m)) + 8
			}
		default:
			t.Fatalf("key %s: type %s not measured", k, typ)
		}
	}
	return total
}

// portalCall sends one request to an API server, with a portal token unless tok is "", and returns the
// status and body of the answer.
func portalCall(t *testing.T, srv *httptest.Server, tok, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// decodeJSON decodes an answer's body, refusing unknown fields.
func decodeJSON(t *testing.T, body string, dst any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(dst), body)
}

// TestPortalCreateCostsRedisItsSize: a portal create of a body close to the 64 KiB request bound is
// either refused or stored in at most 64 bytes of Redis per byte of request, however many patterns it
// names; a create at every bound is accepted and stays within the same ratio.
func TestPortalCreateCostsRedisItsSize(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	srv := httptest.NewServer(d.Portal())
	t.Cleanup(srv.Close)
	tok, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	body := func(patterns []string) string {
		return `{"url":"https://example.com/hook","events":["` + strings.Join(patterns, `","`) + `"]}`
	}
	var many []string
	for i, n := 0, len(body(nil)); n < MaxRequestBody-16; i++ { // n: the body's length with many
		p := fmt.Sprintf("p%d", i)
		many, n = append(many, p), n+len(p)+3 // a pattern and its `","`
	}
	many = many[:len(many)-1]
	var atBounds []string
	for i := range 64 {
		p := fmt.Sprintf("order.%d.", i)
		p += strings.Repeat("x", 4096/64-len(p))
		atBounds = append(atBounds, p)
	}
	for _, tc := range []struct {
		name     string
		patterns []string
		accepted bool
	}{
		{"64 KiB of patterns", many, false},
		{"every bound", atBounds, true},
	} {
		before := storedBytes(t, tr)
		b := body(tc.patterns)
		status, _ := portalCall(t, srv, tok, "POST", "/webhooks", b)
		used := storedBytes(t, tr) - before
		t.Logf("%s: %d patterns, %d bytes of request: %d, %d bytes of Redis (%.1fx)", tc.name, len(tc.patterns), len(b),
			status, used, float64(used)/float64(len(b)))
		if tc.accepted {
			assert.Equal(t, http.StatusCreated, status, tc.name)
		} else {
			assert.Equal(t, http.StatusBadRequest, status, tc.name)
		}
		assert.LessOrEqual(t, used, int64(64*len(b)), "%s: Redis bytes at most 64x the request", tc.name)
	}
}

// TestHeaderValuesAreRefusedNotRewritten: a value that is not UTF-8, or empty, is refused at Create;
// a valid one is stored and sent byte for byte.
func TestHeaderValuesAreRefusedNotRewritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	for name, v := range map[string]string{"latin-1": "caf\xe9", "truncated": "\xe2\x82", "empty": ""} {
		_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Headers: map[string]string{"X-V": v}})
		assert.ErrorIs(t, err, ErrInvalidWebhook, name)
	}
	w, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Headers: map[string]string{"X-V": "café ☕"}})
	require.NoError(t, err)
	got, err := d.Webhooks().Get(ctx, w.ID)
	require.NoError(t, err)
	assert.Equal(t, "café ☕", got.Headers["X-V"])
}

// TestDotTenantsAreRefused: "." and ".." are not tenant names, for webhooks, events or tokens.
func TestDotTenantsAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	for _, tenant := range []string{".", ".."} {
		_, err := d.Webhooks().Create(ctx, Webhook{URL: "https://example.com/", Events: []string{"*"}, Tenant: tenant})
		assert.ErrorIs(t, err, ErrInvalidWebhook, tenant)
		_, err = d.Dispatch(ctx, Event{Type: "x", ID: "1", Tenant: tenant})
		assert.ErrorIs(t, err, ErrInvalidEvent, tenant)
		_, err = d.PortalToken(tenant, time.Minute)
		assert.Error(t, err, tenant)
	}
	for _, tenant := range []string{"a.b", "...", ".a"} {
		assert.NoError(t, validateTenant(tenant), tenant)
	}
}

// TestLargestWebhookBytes: a webhook at every bound (with characters JSON escapes where it can) costs
// Redis at most maxWebhookRedisBytes, the figure README's "Security" multiplies by the tenant quota.
func TestLargestWebhookBytes(t *testing.T) {
	t.Parallel()
	const maxWebhookRedisBytes = 64 << 10
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	w := Webhook{Tenant: strings.Repeat("t", MaxTenantLen), Description: strings.Repeat("\"", maxDescriptionLen),
		Headers: map[string]string{}}
	w.URL = "https://example.com/" + strings.Repeat("a", egress.MaxURLLen-len("https://example.com/"))
	for i := range MaxEventPatterns {
		p := fmt.Sprintf("e%02d.", i)
		w.Events = append(w.Events, p+strings.Repeat("x", MaxEventPatternsBytes/MaxEventPatterns-len(p)))
	}
	for i := range MaxHeaders {
		name := fmt.Sprintf("X-%02d-", i)
		w.Headers[name+strings.Repeat("h", MaxHeaderNameLen-len(name))] = strings.Repeat("<", MaxHeaderValueLen)
	}
	var filter strings.Builder
	filter.WriteString(`{"$or":[`)
	for i := 0; filter.Len() < flt.MaxBytes-300; i++ {
		if i > 0 {
			filter.WriteString(",")
		}
		fmt.Fprintf(&filter, `{"data.k%d":%q}`, i, strings.Repeat("<", 200))
	}
	filter.WriteString("]}")
	w.Filter = json.RawMessage(filter.String())
	before := storedBytes(t, tr)
	_, err := d.Webhooks().Create(ctx, w)
	require.NoError(t, err)
	used := storedBytes(t, tr) - before
	t.Logf("the largest webhook: %d bytes of Redis (filter %d bytes)", used, len(w.Filter))
	assert.LessOrEqual(t, used, int64(maxWebhookRedisBytes))
}

// TestDescriptionIsText: a description that is not UTF-8, or holds control characters (which JSON
// would store six-fold), is refused.
func TestDescriptionIsText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	for _, desc := range []string{"caf\xe9", "a\x01b", "a\rb", "\x7f"} {
		_, err := d.Webhooks().Create(ctx, Webhook{URL: "https://example.com/", Events: []string{"*"}, Description: desc})
		assert.ErrorIs(t, err, ErrInvalidWebhook, "%q", desc)
	}
	_, err := d.Webhooks().Create(ctx, Webhook{URL: "https://example.com/", Events: []string{"*"}, Description: "Orders <b>\n\tcafé"})
	assert.NoError(t, err)
}
