package otelwebhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/otelwebhooks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// receiver answers with its status (200 when 0) and keeps the traceparent headers it got.
type receiver struct {
	srv    *httptest.Server
	status atomic.Int32
	tps    chan string
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{tps: make(chan string, 16)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.tps <- r.Header.Get("traceparent")
		code := int(rc.status.Load())
		if code == 0 {
			code = http.StatusOK
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

type telemetry struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
}

func newTelemetry(t *testing.T) *telemetry {
	tel := &telemetry{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(tel.spans))
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	return tel
}

// replica is one Dispatcher, instrumented on its own, as another process would be.
func (tel *telemetry) replica(t *testing.T, rdb redis.UniversalClient, opts webhooks.Options) (*webhooks.Dispatcher, *otelwebhooks.Telemetry) {
	ot, err := otelwebhooks.New(otelwebhooks.WithTracerProvider(tel.tp), otelwebhooks.WithMeterProvider(tel.mp))
	require.NoError(t, err)
	opts.KeyPrefix, opts.AllowPrivateNetworks, opts.Timeout = "otelt", true, 2*time.Second
	d, err := webhooks.New(rdb, ot.Instrument(opts))
	require.NoError(t, err)
	return d, ot
}

func newRedis(t *testing.T) redis.UniversalClient {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// processUntil runs d's worker passes until it has settled n deliveries.
func processUntil(t *testing.T, d *webhooks.Dispatcher, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for got := 0; got < n; {
		k, err := d.ProcessDue(context.Background())
		require.NoError(t, err)
		got += k
		if time.Now().After(deadline) {
			t.Fatalf("settled %d of %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRetryByAnotherDispatcherJoinsTheDispatchTrace: a Dispatch whose first attempt fails and whose
// retry, made by another Dispatcher, succeeds gives one trace: the Dispatch span, and both attempt
// spans its children, linked to it, each request carrying its attempt span's traceparent.
func TestRetryByAnotherDispatcherJoinsTheDispatchTrace(t *testing.T) {
	ctx := context.Background()
	tel := newTelemetry(t)
	rdb := newRedis(t)
	opts := webhooks.Options{RetrySchedule: []time.Duration{50 * time.Millisecond}}
	d1, _ := tel.replica(t, rdb, opts)
	d2, _ := tel.replica(t, rdb, opts)
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	wh, err := d1.Webhooks().Create(ctx, webhooks.Webhook{URL: rc.srv.URL + "/hook?token=s3cret", Events: []string{"order.*"}})
	require.NoError(t, err)

	res, err := d1.Dispatch(ctx, webhooks.Event{ID: "evt_1", Type: "order.paid", Data: map[string]string{"card": "4242"}})
	require.NoError(t, err)
	require.Equal(t, webhooks.StatusPending, res[0].Delivery.Status)
	rc.status.Store(http.StatusOK)
	processUntil(t, d2, 1)

	spans := tel.spans.GetSpans()
	require.Len(t, spans, 3)
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	require.Len(t, byName["webhooks.dispatch"], 1)
	dispatch := byName["webhooks.dispatch"][0]
	attempts := byName["POST"]
	require.Len(t, attempts, 2)
	assert.Equal(t, trace.SpanKindProducer, dispatch.SpanKind)
	assert.False(t, dispatch.Parent.IsValid(), "the Dispatch span is the trace's root here")
	for i, a := range attempts {
		assert.Equal(t, dispatch.SpanContext.TraceID(), a.SpanContext.TraceID(), "attempt %d is in the Dispatch's trace", i+1)
		assert.Equal(t, dispatch.SpanContext.SpanID(), a.Parent.SpanID(), "attempt %d is a child of the Dispatch span", i+1)
		require.Len(t, a.Links, 1)
		assert.Equal(t, dispatch.SpanContext.SpanID(), a.Links[0].SpanContext.SpanID(), "attempt %d links to the Dispatch span", i+1)
		assert.Equal(t, trace.SpanKindClient, a.SpanKind)
		attrs := attribute.NewSet(a.Attributes...)
		for k, want := range map[attribute.Key]attribute.Value{
			"http.request.method":       attribute.StringValue("POST"),
			"url.full":                  attribute.StringValue(rc.srv.URL + "/hook"),
			otelwebhooks.AttrDeliveryID: attribute.StringValue(res[0].Delivery.ID),
			otelwebhooks.AttrWebhookID:  attribute.StringValue(wh.ID),
			otelwebhooks.AttrEventType:  attribute.StringValue("order.paid"),
			otelwebhooks.AttrAttempt:    attribute.IntValue(i + 1),
			"http.response.status_code": attribute.IntValue([]int{500, 200}[i]),
		} {
			got, ok := attrs.Value(k)
			assert.True(t, ok, "attempt %d has %s", i+1, k)
			assert.Equal(t, want, got, "attempt %d: %s", i+1, k)
		}
		for _, kv := range a.Attributes {
			assert.NotContains(t, kv.Value.Emit(), "s3cret", "no secret in %s", kv.Key)
			assert.NotContains(t, kv.Value.Emit(), "4242", "no body in %s", kv.Key)
		}
		got := <-rc.tps
		assert.Equal(t, fmt.Sprintf("00-%s-%s-01", a.SpanContext.TraceID(), a.SpanContext.SpanID()), got,
			"request %d carries its attempt span's traceparent", i+1)
	}
	assert.Equal(t, "Error", attempts[0].Status.Code.String())
	assert.Equal(t, "Unset", attempts[1].Status.Code.String())
}

// TestMetrics: the attempt counters and histogram, the failed deliveries and the backlog gauges have
// the values a known sequence of outcomes gives.
func TestMetrics(t *testing.T) {
	ctx := context.Background()
	tel := newTelemetry(t)
	rdb := newRedis(t)
	d, ot := tel.replica(t, rdb, webhooks.Options{RetrySchedule: []time.Duration{20 * time.Millisecond}})
	require.NoError(t, ot.Observe(d))
	failing, ok := newReceiver(t), newReceiver(t)
	failing.status.Store(http.StatusInternalServerError)
	_, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: failing.srv.URL, Events: []string{"a.fail"}})
	require.NoError(t, err)
	_, err = d.Webhooks().Create(ctx, webhooks.Webhook{URL: ok.srv.URL, Events: []string{"a.ok"}})
	require.NoError(t, err)

	// evt_f fails twice (no retry left): failed for good. evt_o succeeds. Three more wait in the queue.
	_, err = d.Dispatch(ctx, webhooks.Event{ID: "evt_f", Type: "a.fail"})
	require.NoError(t, err)
	processUntil(t, d, 1)
	_, err = d.Dispatch(ctx, webhooks.Event{ID: "evt_o", Type: "a.ok"})
	require.NoError(t, err)
	for i := range 3 {
		_, err = d.Enqueue(ctx, webhooks.Event{ID: fmt.Sprint("evt_q", i), Type: "a.ok"})
		require.NoError(t, err)
	}

	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(ctx, &rm))
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, otelwebhooks.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	attempts := map[string]int64{}
	for _, p := range got["webhooks.attempts"].Data.(metricdata.Sum[int64]).DataPoints {
		o, _ := p.Attributes.Value(otelwebhooks.AttrOutcome)
		attempts[o.AsString()] = p.Value
	}
	assert.Equal(t, map[string]int64{"http_error": 2, "success": 1}, attempts)
	var observed uint64
	for _, p := range got["webhooks.attempt.duration"].Data.(metricdata.Histogram[float64]).DataPoints {
		observed += p.Count
	}
	assert.EqualValues(t, 3, observed)
	assert.Equal(t, "s", got["webhooks.attempt.duration"].Unit)
	assert.EqualValues(t, 1, got["webhooks.deliveries.failed"].Data.(metricdata.Sum[int64]).DataPoints[0].Value)
	gauge := func(name string) int64 {
		return got[name].Data.(metricdata.Gauge[int64]).DataPoints[0].Value
	}
	assert.EqualValues(t, 3, gauge("webhooks.deliveries.due"))
	assert.EqualValues(t, 0, gauge("webhooks.deliveries.scheduled"))
	assert.EqualValues(t, 0, gauge("webhooks.deliveries.leased"))
	assert.EqualValues(t, 0, gauge("webhooks.circuits.open"))
	age := got["webhooks.deliveries.oldest_due.age"].Data.(metricdata.Gauge[float64]).DataPoints[0].Value
	assert.GreaterOrEqual(t, age, 0.0)
	assert.Less(t, age, 5.0)
}
