package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// catalogReads counts the commands a client sends, and the reads of the event-type catalog that
// answered it whole (the catalog script's reply carries the types, not only the version).
type catalogReads struct {
	passHook
	commands, whole atomic.Int64
}

func (h *catalogReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.commands.Add(1)
		switch reply := cmd.(type) {
		case *redis.Cmd: // the cache's script: the version, and the types when it changed
			if items, _ := reply.Val().([]any); len(items) > 1 && strings.HasPrefix(strings.ToLower(cmd.Name()), "eval") {
				h.whole.Add(1)
			}
		case *redis.MapStringStringCmd: // HGETALL of the catalog
			h.whole.Add(1)
		}
		return err
	}
}

// typedCatalog creates event types from..to-1 of about size bytes each.
func typedCatalog(t testing.TB, d *Dispatcher, from, to, size int) {
	t.Helper()
	for i := from; i < to; i++ {
		_, err := d.EventTypes().Create(context.Background(), EventType{Name: fmt.Sprintf("order.t%03d", i),
			Description: strings.Repeat("d", min(size, 1000)),
			Schema:      json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"` + strings.Repeat("x", max(size-1000, 0)) + `"}}}`)})
		require.NoError(t, err)
	}
}

// TestCatalogServedFromTheProcessCopy: GET /event-types and /event-types/openapi.json through the
// portal read the catalog from the process's copy (issue 43: 1,000 types of 62 KiB were read whole and
// decoded on every request): N requests send Redis no read of the catalog whole, whatever N; a change
// is served at once.
func TestCatalogServedFromTheProcessCopy(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	hook := &catalogReads{}
	c.AddHook(hook)
	d := newTestDispatcherOn(t, c, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	typedCatalog(t, d, 0, 20, 2000)
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	portal := d.Portal()
	get := func(path string) string {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		portal.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		return rec.Body.String()
	}
	list, doc := get("/event-types"), get("/event-types/openapi.json") // the first reads the catalog
	var decoded struct {
		EventTypes []EventType `json:"event_types"`
	}
	require.NoError(t, json.Unmarshal([]byte(list), &decoded))
	require.Len(t, decoded.EventTypes, 20)
	assert.Equal(t, "order.t000", decoded.EventTypes[0].Name, "by name")

	whole := hook.whole.Load()
	const requests = 200
	for range requests {
		require.Equal(t, list, get("/event-types"))
		require.Equal(t, doc, get("/event-types/openapi.json"))
	}
	assert.Equal(t, whole, hook.whole.Load(), "%d requests read the catalog whole again", 2*requests)

	// A change this process makes is served at once.
	typedCatalog(t, d, 20, 21, 100)
	require.NoError(t, json.Unmarshal([]byte(get("/event-types")), &decoded))
	assert.Len(t, decoded.EventTypes, 21, "the new type is listed")
	assert.Contains(t, get("/event-types/openapi.json"), "order.t020")
}

// TestCatalogAnswerSharedByConcurrentRequests: the catalog's answers are made once per version and
// shared: 8 clients reading them at once, through the operator's API and the portal, each get the
// whole document, and (under -race) no request writes into the shared bytes (CI's race detector
// caught writeJSON appending the final newline to them).
func TestCatalogAnswerSharedByConcurrentRequests(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	typedCatalog(t, d, 0, 5, 100)
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(t, err)
	op, portal := d.Handler(), d.Portal()
	want := map[string]string{}
	for _, path := range []string{"/event-types", "/event-types/openapi.json"} {
		want[path] = call(op, http.MethodGet, path, "").Body.String()
		require.True(t, json.Valid([]byte(want[path])), want[path])
	}
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for i := range 20 {
				path := []string{"/event-types", "/event-types/openapi.json"}[i%2]
				rec := call(op, http.MethodGet, path, "")
				if c%2 == 1 {
					rec = call(portal, http.MethodGet, path, token)
				}
				assert.Equal(t, http.StatusOK, rec.Code)
				assert.Equal(t, want[path], rec.Body.String(), "client %d, %s", c, path)
			}
		})
	}
	wg.Wait()
}

// BenchmarkPortalEventTypes: GET /event-types through the portal on a catalog of 200 types of ~8 KiB
// (allocations per request: issue 43 measured ~588 MB allocated per request of a 62 MB catalog).
func BenchmarkPortalEventTypes(b *testing.B) {
	tr := newTestRedis(b)
	d := newTestDispatcher(b, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	typedCatalog(b, d, 0, 200, 8000)
	token, err := d.PortalToken("acme", time.Hour)
	require.NoError(b, err)
	portal := d.Portal()
	for _, path := range []string{"/event-types", "/event-types/openapi.json"} {
		b.Run(strings.TrimPrefix(path, "/event-types"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				rec := httptest.NewRecorder()
				portal.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}

// TestCatalogSizeIsBounded: the catalog's JSON in all is at most MaxCatalogBytes: the write that would
// pass it is refused in words naming the bound, and the catalog stays as it was.
func TestCatalogSizeIsBounded(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	ctx := context.Background()
	const size = 60 << 10
	var refused error
	created := 0
	for i := 0; i < 2*MaxCatalogBytes/size && refused == nil; i++ {
		_, err := d.EventTypes().Create(ctx, EventType{Name: fmt.Sprintf("big.t%03d", i),
			Schema: json.RawMessage(`{"type":"object","description":"` + strings.Repeat("x", size) + `"}`)})
		if err != nil {
			refused = err
			break
		}
		created++
	}
	require.Error(t, refused, "the bound refuses a write")
	assert.ErrorIs(t, refused, ErrInvalidEventType)
	assert.Contains(t, refused.Error(), "MaxCatalogBytes")
	assert.Equal(t, MaxCatalogBytes/(size+100), created, "as many as fit")
	list, err := d.EventTypes().List(ctx)
	require.NoError(t, err)
	assert.Len(t, list, created, "the refused type is not stored")
	total := 0
	for _, raw := range tr.rdb.HVals(ctx, d.keys.EventTypes()).Val() {
		total += len(raw)
	}
	assert.LessOrEqual(t, total, MaxCatalogBytes)
}
