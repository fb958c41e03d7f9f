package webhooks

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/trace"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeTracer records what the library tells a Tracer. A context's "span" is a traceparent under
// tpKey; each attempt gets a span of its own, a child of the stored one.
type fakeTracer struct {
	mu       sync.Mutex
	calls    []CallInfo
	ends     []CallEnd
	attempts []fakeAttempt
}

type fakeAttempt struct {
	stored string // the traceparent handed to StartAttempt
	span   string // the attempt's own
	start  AttemptStart
	end    AttemptEnd
}

type tpKey struct{}

func (f *fakeTracer) Traceparent(ctx context.Context) string {
	tp, _ := ctx.Value(tpKey{}).(string)
	return tp
}

func (f *fakeTracer) StartCall(ctx context.Context, c CallInfo) (context.Context, func(CallEnd)) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	ctx = context.WithValue(ctx, tpKey{}, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	return ctx, func(e CallEnd) {
		f.mu.Lock()
		f.ends = append(f.ends, e)
		f.mu.Unlock()
	}
}

func (f *fakeTracer) StartAttempt(ctx context.Context, stored string, a AttemptStart) (context.Context, func(AttemptEnd)) {
	f.mu.Lock()
	i := len(f.attempts)
	span := "00-0af7651916cd43dd8448eb211c80319c-" + strings.Repeat(string(rune('a'+i)), 16) + "-01"
	f.attempts = append(f.attempts, fakeAttempt{stored: stored, span: span, start: a})
	f.mu.Unlock()
	return context.WithValue(ctx, tpKey{}, span), func(e AttemptEnd) {
		f.mu.Lock()
		f.attempts[i].end = e
		f.mu.Unlock()
	}
}

// TestTraceparentFollowsTheDeliveryAcrossRetries: the traceparent of Dispatch's context is stored with
// the delivery, handed to the Tracer for the inline attempt and for the retry made by another
// Dispatcher, and every request carries its attempt's traceparent.
func TestTraceparentFollowsTheDeliveryAcrossRetries(t *testing.T) {
	ctx := context.Background()
	tr := newTestRedis(t)
	ft := &fakeTracer{}
	opts := Options{Tracer: ft, RetrySchedule: []time.Duration{time.Minute}}
	d1, clock := newClockedDispatcher(t, tr, opts)
	d2 := newTestDispatcher(t, tr, opts)
	d2.now = clock.Now
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	wh := mustCreate(t, d1, rc, "order.*")
	evt := Event{ID: "evt_trace", Type: "order.paid", Data: map[string]int{"n": 1}}
	res, err := d1.Dispatch(ctx, evt)
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.Equal(t, StatusPending, res[0].Delivery.Status)

	rc.status.Store(http.StatusOK)
	clock.Advance(2 * time.Minute)
	n, err := d2.ProcessDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	callSpan := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ft.mu.Lock()
	defer ft.mu.Unlock()
	require.Equal(t, []CallInfo{{Operation: "Dispatch", EventID: evt.ID, EventType: evt.Type}}, ft.calls)
	require.Len(t, ft.ends, 1)
	assert.NoError(t, ft.ends[0].Err)
	assert.Len(t, ft.ends[0].Results, 1)
	require.Len(t, ft.attempts, 2)
	for i, a := range ft.attempts {
		assert.Equal(t, callSpan, a.stored, "attempt %d is handed the Dispatch's traceparent", i+1)
		assert.Equal(t, AttemptStart{DeliveryID: res[0].Delivery.ID, WebhookID: wh.ID, EventID: evt.ID, EventType: evt.Type,
			Attempt: i + 1, Method: http.MethodPost, URL: rc.srv.URL}, a.start)
		assert.False(t, a.end.Abandoned)
	}
	assert.Equal(t, http.StatusInternalServerError, ft.attempts[0].end.StatusCode)
	assert.Equal(t, "HTTP 500", ft.attempts[0].end.Error)
	assert.Equal(t, http.StatusOK, ft.attempts[1].end.StatusCode)
	reqs := rc.requests()
	require.Len(t, reqs, 2)
	for i, r := range reqs {
		assert.Equal(t, ft.attempts[i].span, r.Header.Get("traceparent"), "request %d carries its attempt's traceparent", i+1)
	}

	// The stored record keeps it; a Dispatcher with no Tracer reads it all the same.
	plain := newTestDispatcher(t, tr, Options{})
	dl, err := plain.Deliveries().Get(ctx, res[0].Delivery.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, dl.Status)
	raw, err := tr.rdb.Get(ctx, d1.keys.Delivery(shardOf(evt.ID), dl.ID)).Result()
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(raw, callSpan))
}

// TestEnqueueStoresTraceparentAndNoTracerStoresNone: Enqueue traces its call and stores the
// traceparent; without a Tracer records stay in version '1' and requests carry no traceparent.
func TestEnqueueStoresTraceparentAndNoTracerStoresNone(t *testing.T) {
	ctx := context.Background()
	tr := newTestRedis(t)
	ft := &fakeTracer{}
	d := newTestDispatcher(t, tr, Options{Tracer: ft})
	rc := newReceiver(t)
	mustCreate(t, d, rc, "a.*")
	res, err := d.Enqueue(ctx, Event{ID: "evt_q", Type: "a.b"})
	require.NoError(t, err)
	raw, err := tr.rdb.Get(ctx, d.keys.Delivery(shardOf("evt_q"), res[0].Delivery.ID)).Result()
	require.NoError(t, err)
	assert.Equal(t, byte(rdb.RecordVersionTraced), raw[rdb.RecordHeadLen-1])
	ft.mu.Lock()
	assert.Equal(t, "Enqueue", ft.calls[0].Operation)
	ft.mu.Unlock()

	plain := newTestDispatcher(t, tr, Options{})
	res, err = plain.Dispatch(ctx, Event{ID: "evt_plain", Type: "a.b"})
	require.NoError(t, err)
	raw, err = tr.rdb.Get(ctx, d.keys.Delivery(shardOf("evt_plain"), res[0].Delivery.ID)).Result()
	require.NoError(t, err)
	assert.Equal(t, byte(rdb.RecordVersion), raw[rdb.RecordHeadLen-1])
	reqs := rc.requests()
	require.Len(t, reqs, 1)
	assert.Empty(t, reqs[0].Header.Get("traceparent"))
}

func TestValidTraceparent(t *testing.T) {
	assert.True(t, trace.Valid("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
	assert.False(t, trace.Valid(""))
	assert.False(t, trace.Valid("a b"))
	assert.False(t, trace.Valid(strings.Repeat("a", 256+1)))
}
