package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
)

// fake is a Dispatcher whose Enqueue answers by event id (the real one's, unless fail names it) and
// records the events the real one accepted.
type fake struct {
	real     *webhooks.Dispatcher
	mu       sync.Mutex
	enqueued []string
	fail     map[string]error
}

func (f *fake) Enqueue(ctx context.Context, evt webhooks.Event) ([]webhooks.Result, error) {
	f.mu.Lock()
	err := f.fail[evt.ID]
	f.mu.Unlock()
	if err != nil {
		return []webhooks.Result{{WebhookID: "wh_1", Err: err}}, err
	}
	rs, err := f.real.Enqueue(ctx, evt)
	if err == nil {
		f.mu.Lock()
		f.enqueued = append(f.enqueued, evt.ID)
		f.mu.Unlock()
	}
	return rs, err
}

func (f *fake) ValidateEvent(ctx context.Context, evt webhooks.Event) error {
	return f.real.ValidateEvent(ctx, evt)
}

type nopObserver struct{}

func (nopObserver) Request(string, int, time.Duration) {}
func (nopObserver) Events(string, int)                 {}

func newHandler(t *testing.T, fail map[string]error) (*Handler, *fake) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	d, err := webhooks.New(rdb, webhooks.Options{AllowPrivateNetworks: true, MaxPayloadBytes: 2048})
	require.NoError(t, err)
	_, err = d.Webhooks().Create(context.Background(), webhooks.Webhook{URL: "http://127.0.0.1:9/hook", Events: []string{"*"}})
	require.NoError(t, err)
	f := &fake{real: d, fail: fail}
	return &Handler{D: f, MaxPayloadBytes: 2048, Log: slog.New(slog.DiscardHandler), Observe: nopObserver{},
		Refusing: func() string { return "" }}, f
}

type answer struct {
	Events []struct {
		ID       string
		Accepted bool
		Webhooks []struct {
			Accepted bool
			Error    string
		}
		Error *struct{ Code, Field string }
	}
	Error *struct{ Code, Message, Field string }
}

func post(h *Handler, method, body string) (int, answer, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, "/v1/events", strings.NewReader(body)))
	var a answer
	_ = json.Unmarshal(rec.Body.Bytes(), &a)
	return rec.Code, a, rec.Body.String()
}

// TestRefusedBeforeEnqueue: a request that does not decode, or whose event is invalid, is answered
// 400 or 413 naming the field as the request names it, and nothing of it is enqueued (a batch is
// refused whole).
func TestRefusedBeforeEnqueue(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 3000)
	var hundredOne []string
	for i := range 101 {
		hundredOne = append(hundredOne, fmt.Sprintf(`{"id":"b%d","type":"a.b"}`, i))
	}
	cases := []struct {
		body   string
		status int
		field  string
		words  string
	}{
		{`{"id":"e1","type":"a.b"`, 400, "", "not valid JSON"},
		{`[1,2]`, 400, "", "JSON object"},
		{`{"id":"e1","type":"a.b"} {"id":"e2"}`, 400, "", "more JSON"},
		{`{"type":"a.b"}`, 400, "id", "id is required"},
		{`{"id":"e1"}`, 400, "type", "type is required"},
		{`{"id":5,"type":"a.b"}`, 400, "id", "must be a string"},
		{`{"id":"e1","type":"a.b","colour":"red"}`, 400, "colour", "unknown field"},
		{`{"id":"e1","type":"a.b","time":"yesterday"}`, 400, "time", "RFC 3339"},
		{`{"id":"e1","type":"a..b"}`, 400, "type", "segments"},
		{`{"id":"e1","type":"a.b","tenant":"a/b"}`, 400, "tenant", "tenant"},
		{`{"id":"e1","type":"a.b","data":"` + big + `"}`, 413, "data", "-max-payload-bytes"},
		{`{"events":[]}`, 400, "events", "empty"},
		{`{"events":{}}`, 400, "events", "array"},
		{`{"events":[1]}`, 400, "events[0]", "events[0] must be an event object"},
		{`{"events":[` + strings.Join(hundredOne, ",") + `]}`, 413, "events", "at most 100"},
		{`{"events":[{"id":"b1","type":"a.b"}],"id":"x"}`, 400, "events", "nothing else"},
		{`{"events":[{"id":"b1","type":"a.b"},{"id":"b2","type":"a.b","colour":1}]}`, 400, "events[1].colour", "unknown field"},
		{`{"events":[{"id":"b1","type":"a.b"},{"id":"b2","type":"a..b"}]}`, 400, "events[1].type", "events[1]: type"},
		{`{"events":[{"id":"b1","type":"a.b"},{"id":"b2","type":"a.b","data":"` + big + `"}]}`, 413, "events[1].data", "2048"},
	}
	for _, c := range cases {
		t.Run(c.body[:min(len(c.body), 60)], func(t *testing.T) {
			t.Parallel()
			h, f := newHandler(t, nil)
			status, a, raw := post(h, "POST", c.body)
			assert.Equal(t, c.status, status, raw)
			require.NotNil(t, a.Error, raw)
			assert.Equal(t, c.field, a.Error.Field, raw)
			assert.Contains(t, a.Error.Message, c.words)
			assert.NotContains(t, a.Error.Message, "webhooks: ", "no library prefix in the words")
			assert.Empty(t, f.enqueued, "nothing enqueued")
		})
	}
	h, _ := newHandler(t, nil)
	status, _, _ := post(h, "GET", "")
	assert.Equal(t, 405, status)
	h.Refusing = func() string { return "the server is shutting down" }
	status, a, _ := post(h, "POST", `{"id":"e1","type":"a.b"}`)
	assert.Equal(t, 503, status)
	assert.Equal(t, "shutting_down", a.Error.Code)
}

// TestBatchOutcomes: a batch's events are each answered in order; one that Redis could not take
// makes the answer a 503 that lists which were accepted (sending again is safe), a conflict a 409.
func TestBatchOutcomes(t *testing.T) {
	t.Parallel()
	notAccepted := fmt.Errorf("%w: event b2: connection refused", webhooks.ErrNotAccepted)
	h, f := newHandler(t, map[string]error{"b2": notAccepted})
	_, _, _ = post(h, "POST", `{"id":"c1","type":"a.b","data":{"v":1}}`)
	status, a, raw := post(h, "POST", `{"events":[{"id":"b1","type":"a.b"},{"id":"b2","type":"a.b"},{"id":"b3","type":"a.b"}]}`)
	assert.Equal(t, 503, status, raw)
	require.Len(t, a.Events, 3)
	assert.Equal(t, []bool{true, false, true}, []bool{a.Events[0].Accepted, a.Events[1].Accepted, a.Events[2].Accepted})
	assert.Equal(t, "unavailable", a.Events[1].Error.Code)
	assert.Contains(t, a.Error.Message, "1 of 3 events were not accepted")
	assert.Contains(t, a.Error.Message, "Send the same request again: it is safe")
	assert.NotContains(t, raw, "connection refused", "the cause is logged, not sent")

	status, a, raw = post(h, "POST", `{"events":[{"id":"b4","type":"a.b"},{"id":"c1","type":"a.b","data":{"v":2}}]}`)
	assert.Equal(t, 409, status, raw)
	require.Len(t, a.Events, 2)
	assert.True(t, a.Events[0].Accepted)
	assert.False(t, a.Events[1].Accepted)
	assert.Equal(t, "events[1].id", a.Error.Field)
	assert.Equal(t, "conflict", a.Error.Code)

	status, _, raw = post(h, "POST", `{"id":"c1","type":"a.b","data":{"v":1},"order_key":"k"}`)
	assert.Equal(t, 409, status, raw)
	assert.Contains(t, raw, "order_key")
	assert.ElementsMatch(t, []string{"c1", "b1", "b3", "b4"}, f.enqueued, "the events Enqueue accepted")
}
