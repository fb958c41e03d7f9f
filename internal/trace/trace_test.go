package trace

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
	"github.com/smartdrop/webhooks/internal/worker"
)

const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

type ctxKey struct{}

// fakeTracer reports the traceparent a context carries (ctxKey) and records what it is told.
type fakeTracer struct {
	calls    []types.CallInfo
	callEnds []types.CallEnd
	attempts []types.AttemptStart
	parents  []string // the stored traceparent each attempt was started with
	ends     []types.AttemptEnd
	nilCtx   bool // StartAttempt returns a nil context
}

func (f *fakeTracer) Traceparent(ctx context.Context) string {
	s, _ := ctx.Value(ctxKey{}).(string)
	return s
}

func (f *fakeTracer) StartCall(ctx context.Context, call types.CallInfo) (context.Context, func(types.CallEnd)) {
	f.calls = append(f.calls, call)
	return context.WithValue(ctx, ctxKey{}, tp), func(e types.CallEnd) { f.callEnds = append(f.callEnds, e) }
}

func (f *fakeTracer) StartAttempt(ctx context.Context, traceparent string, a types.AttemptStart) (context.Context, func(types.AttemptEnd)) {
	f.attempts, f.parents = append(f.attempts, a), append(f.parents, traceparent)
	if f.nilCtx {
		return nil, nil
	}
	return context.WithValue(ctx, ctxKey{}, "00-attempt"), func(e types.AttemptEnd) { f.ends = append(f.ends, e) }
}

func TestValid(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s  string
		ok bool
	}{
		{tp, true}, {"x", true}, {"", false}, {strings.Repeat("a", 256), true}, {strings.Repeat("a", 257), false},
		{"with space", false}, {"tab\t", false}, {"é", false}, {"\x7f", false},
	} {
		assert.Equal(t, c.ok, Valid(c.s), "%q", c.s)
	}
}

// TestNoTracerCostsNothing: without a Tracer, nothing is stored or sent and send runs as it is.
func TestNoTracerCostsNothing(t *testing.T) {
	t.Parallel()
	var tr Tracing
	ctx := context.WithValue(context.Background(), ctxKey{}, tp)
	assert.Empty(t, tr.Traceparent(ctx))
	cctx, end := tr.StartCall(ctx, "Dispatch", types.Event{ID: "e"})
	assert.Equal(t, ctx, cctx)
	end(nil, nil)
	recs := []*rdb.Record{{}}
	tr.Stamp(ctx, recs)
	assert.Empty(t, recs[0].Traceparent)
	h := http.Header{}
	tr.SetHeader(ctx, h, &rdb.Record{Traceparent: tp})
	assert.Empty(t, h)
	sent := 0
	send := tr.Attempts(func(context.Context, *rdb.WebhookRecord, *rdb.Record, []byte) worker.AttemptResult {
		sent++
		return worker.AttemptResult{OK: true, Code: 200}
	})
	assert.Equal(t, 200, send(ctx, &rdb.WebhookRecord{}, &rdb.Record{}, nil).Code)
	assert.Equal(t, 1, sent)
}

// TestTracerFollowsTheDelivery: the call's traceparent is stored with the records it creates (an
// invalid one is not), the attempt's span starts from the stored one and is told the attempt's end,
// the request carries the attempt's traceparent, or the stored one when the attempt's context has
// none, and the URL the Tracer sees has no credentials.
func TestTracerFollowsTheDelivery(t *testing.T) {
	t.Parallel()
	f := &fakeTracer{}
	tr := Tracing{Tracer: f}
	ctx, end := tr.StartCall(context.Background(), "Enqueue", types.Event{ID: "e1", Type: "a.b"})
	assert.Equal(t, []types.CallInfo{{Operation: "Enqueue", EventID: "e1", EventType: "a.b"}}, f.calls)
	recs := []*rdb.Record{{}, {}}
	tr.Stamp(ctx, recs)
	for _, r := range recs {
		assert.Equal(t, tp, r.Traceparent)
	}
	bad := []*rdb.Record{{}}
	tr.Stamp(context.WithValue(ctx, ctxKey{}, "not valid"), bad)
	assert.Empty(t, bad[0].Traceparent, "an invalid traceparent is not stored")
	end([]types.Result{{WebhookID: "w"}}, nil)
	require.Len(t, f.callEnds, 1)
	assert.Equal(t, "w", f.callEnds[0].Results[0].WebhookID)

	rec := &rdb.Record{Delivery: types.Delivery{ID: "d1", WebhookID: "w1", EventID: "e1", EventType: "a.b", Attempts: 2}, Traceparent: tp}
	wh := &rdb.WebhookRecord{Webhook: types.Webhook{URL: "https://user:pass@example.com/hook?token=s#f"}}
	var header http.Header
	send := tr.Attempts(func(actx context.Context, wh *rdb.WebhookRecord, rec *rdb.Record, _ []byte) worker.AttemptResult {
		header = http.Header{}
		tr.SetHeader(actx, header, rec)
		return worker.AttemptResult{Code: 503, Dur: time.Second, Err: "HTTP 503"}
	})
	send(context.Background(), wh, rec, nil)
	require.Len(t, f.attempts, 1)
	assert.Equal(t, types.AttemptStart{DeliveryID: "d1", WebhookID: "w1", EventID: "e1", EventType: "a.b", Attempt: 3,
		Method: http.MethodPost, URL: "https://example.com/hook"}, f.attempts[0])
	assert.Equal(t, tp, f.parents[0], "the span starts from the stored traceparent")
	assert.Equal(t, "00-attempt", header.Get("traceparent"), "the attempt's own")
	assert.Equal(t, []types.AttemptEnd{{StatusCode: 503, Duration: time.Second, Error: "HTTP 503"}}, f.ends)

	f.nilCtx = true // a Tracer that starts no attempt context: the stored traceparent is sent
	send(context.Background(), wh, rec, nil)
	assert.Equal(t, tp, header.Get("traceparent"))
}
