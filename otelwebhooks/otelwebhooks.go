package otelwebhooks

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/smartdrop/webhooks"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/smartdrop/webhooks/otelwebhooks"

// Attribute keys of the library's own (the HTTP ones follow OpenTelemetry's semantic conventions).
const (
	AttrDeliveryID = attribute.Key("webhooks.delivery.id")
	AttrWebhookID  = attribute.Key("webhooks.webhook.id")
	AttrEventID    = attribute.Key("webhooks.event.id")
	AttrEventType  = attribute.Key("webhooks.event.type")
	AttrAttempt    = attribute.Key("webhooks.attempt")
	AttrOutcome    = attribute.Key("webhooks.outcome")
	AttrTargets    = attribute.Key("webhooks.targets")
	AttrAccepted   = attribute.Key("webhooks.accepted")
	AttrAbandoned  = attribute.Key("webhooks.attempt.abandoned")
)

// Option configures Telemetry.
type Option func(*config)

type config struct {
	tp           trace.TracerProvider
	mp           metric.MeterProvider
	statsTimeout time.Duration
}

// WithTracerProvider sets the tracer provider. Defaults to the global one (otel.GetTracerProvider),
// read when New is called.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithMeterProvider sets the meter provider. Defaults to the global one (otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithStatsTimeout bounds each Dispatcher.Stats call the backlog gauges make. Defaults to 5s.
func WithStatsTimeout(d time.Duration) Option { return func(c *config) { c.statsTimeout = d } }

// Telemetry traces and measures Dispatchers with OpenTelemetry. It is a webhooks.Tracer; Instrument
// puts it, and its hooks, in a Dispatcher's Options. One Telemetry may serve several Dispatchers.
type Telemetry struct {
	tracer       trace.Tracer
	meter        metric.Meter
	prop         propagation.TextMapPropagator
	statsTimeout time.Duration

	attempts metric.Int64Counter
	duration metric.Float64Histogram
	failed   metric.Int64Counter

	gauges struct {
		due, scheduled, leased, open metric.Int64ObservableGauge
		oldest                       metric.Float64ObservableGauge
	}
	mu      sync.Mutex
	sources []*webhooks.Dispatcher
	reg     metric.Registration
}

var _ webhooks.Tracer = (*Telemetry)(nil)

// New makes a Telemetry and its instruments.
func New(opts ...Option) (*Telemetry, error) {
	c := config{statsTimeout: 5 * time.Second}
	for _, o := range opts {
		o(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	t := &Telemetry{tracer: c.tp.Tracer(ScopeName), meter: c.mp.Meter(ScopeName),
		prop: propagation.TraceContext{}, statsTimeout: c.statsTimeout}
	var errs []error
	var err error
	t.attempts, err = t.meter.Int64Counter("webhooks.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("HTTP attempts recorded, by outcome (success, http_error, error)."))
	errs = append(errs, err)
	t.duration, err = t.meter.Float64Histogram("webhooks.attempt.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of recorded HTTP attempts, by outcome."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
	errs = append(errs, err)
	t.failed, err = t.meter.Int64Counter("webhooks.deliveries.failed", metric.WithUnit("{delivery}"),
		metric.WithDescription("Deliveries failed for good: retries ran out, 410 Gone, webhook deleted or disabled."))
	errs = append(errs, err)
	t.gauges.due, err = t.meter.Int64ObservableGauge("webhooks.deliveries.due", metric.WithUnit("{delivery}"),
		metric.WithDescription("Deliveries due now and not leased (Dispatcher.Stats)."))
	errs = append(errs, err)
	t.gauges.scheduled, err = t.meter.Int64ObservableGauge("webhooks.deliveries.scheduled", metric.WithUnit("{delivery}"),
		metric.WithDescription("Deliveries scheduled for later: retries and parked (Dispatcher.Stats)."))
	errs = append(errs, err)
	t.gauges.leased, err = t.meter.Int64ObservableGauge("webhooks.deliveries.leased", metric.WithUnit("{delivery}"),
		metric.WithDescription("Deliveries leased: attempts in flight (Dispatcher.Stats)."))
	errs = append(errs, err)
	t.gauges.oldest, err = t.meter.Float64ObservableGauge("webhooks.deliveries.oldest_due.age", metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest due delivery, 0 when none is due (Dispatcher.Stats)."))
	errs = append(errs, err)
	t.gauges.open, err = t.meter.Int64ObservableGauge("webhooks.circuits.open", metric.WithUnit("{webhook}"),
		metric.WithDescription("Webhooks whose circuit is open (Dispatcher.Stats)."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// Instrument returns opts with this Telemetry as its Tracer and its Hooks wrapped to count attempts
// and failed deliveries (the hooks opts had still run).
func (t *Telemetry) Instrument(opts webhooks.Options) webhooks.Options {
	opts.Tracer = t
	opts.Hooks = t.Hooks(opts.Hooks)
	return opts
}

// Hooks returns next with AttemptFinished and DeliveryFailed wrapped to record the metrics.
func (t *Telemetry) Hooks(next webhooks.Hooks) webhooks.Hooks {
	h := next
	h.AttemptFinished = func(a webhooks.AttemptInfo) {
		set := metric.WithAttributeSet(attribute.NewSet(AttrOutcome.String(webhooks.AttemptOutcome(a.StatusCode, a.Error))))
		t.attempts.Add(context.Background(), 1, set)
		t.duration.Record(context.Background(), a.Duration.Seconds(), set)
		if next.AttemptFinished != nil {
			next.AttemptFinished(a)
		}
	}
	h.DeliveryFailed = func(dl webhooks.Delivery) {
		t.failed.Add(context.Background(), 1)
		if next.DeliveryFailed != nil {
			next.DeliveryFailed(dl)
		}
	}
	return h
}

// Observe reports d's backlog (Dispatcher.Stats) in the gauges, read once per collection. With several
// Dispatchers on one Redis, observe one: they all see the same backlog. Observing Dispatchers with
// different key prefixes adds their figures up.
func (t *Telemetry) Observe(d *webhooks.Dispatcher) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sources = append(t.sources, d)
	if t.reg != nil {
		return nil
	}
	reg, err := t.meter.RegisterCallback(t.observe, t.gauges.due, t.gauges.scheduled, t.gauges.leased,
		t.gauges.oldest, t.gauges.open)
	if err != nil {
		return err
	}
	t.reg = reg
	return nil
}

// observe is the gauges' callback.
func (t *Telemetry) observe(ctx context.Context, o metric.Observer) error {
	t.mu.Lock()
	sources := append([]*webhooks.Dispatcher(nil), t.sources...)
	t.mu.Unlock()
	var due, scheduled, leased int64
	var open int
	var oldest time.Duration
	var errs []error
	for _, d := range sources {
		sctx, cancel := context.WithTimeout(ctx, t.statsTimeout)
		st, err := d.Stats(sctx)
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		due, scheduled, leased, open = due+st.Due, scheduled+st.Scheduled, leased+st.Leased, open+st.OpenCircuits
		oldest = max(oldest, st.OldestDueAge)
	}
	if len(errs) == len(sources) && len(errs) > 0 {
		return errors.Join(errs...) // nothing observed: report no value rather than zeros
	}
	o.ObserveInt64(t.gauges.due, due)
	o.ObserveInt64(t.gauges.scheduled, scheduled)
	o.ObserveInt64(t.gauges.leased, leased)
	o.ObserveInt64(t.gauges.open, int64(open))
	o.ObserveFloat64(t.gauges.oldest, oldest.Seconds())
	return errors.Join(errs...)
}

// Traceparent is the W3C traceparent of ctx's span context, "" when it has no valid one.
func (t *Telemetry) Traceparent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	t.prop.Inject(ctx, c)
	return c["traceparent"]
}

// StartCall starts the span of a Dispatch or Enqueue call: "webhooks.dispatch" or "webhooks.enqueue",
// a producer span, a child of ctx's span.
func (t *Telemetry) StartCall(ctx context.Context, call webhooks.CallInfo) (context.Context, func(webhooks.CallEnd)) {
	name := "webhooks.dispatch"
	if call.Operation == "Enqueue" {
		name = "webhooks.enqueue"
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(AttrEventID.String(call.EventID), AttrEventType.String(call.EventType)))
	return ctx, func(e webhooks.CallEnd) {
		accepted := 0
		for _, r := range e.Results {
			if r.Accepted() {
				accepted++
			}
		}
		span.SetAttributes(AttrTargets.Int(len(e.Results)), AttrAccepted.Int(accepted))
		if e.Err != nil {
			span.RecordError(e.Err)
			span.SetStatus(codes.Error, e.Err.Error())
		}
		span.End()
	}
}

// StartAttempt starts the span of one HTTP attempt: a client span named after the method, following
// the HTTP client semantic conventions, with the delivery's ids, event type and attempt number. Its
// parent is ctx's span (Dispatch's, for an inline attempt) or else the span stored with the delivery
// (a retry, by any replica), so a delivery's attempts share the trace of the call that caused them;
// it also links to the stored span. It records neither secrets nor bodies; the URL loses its user
// info and query.
func (t *Telemetry) StartAttempt(ctx context.Context, traceparent string, a webhooks.AttemptStart) (context.Context, func(webhooks.AttemptEnd)) {
	stored := trace.SpanContextFromContext(t.prop.Extract(context.Background(),
		propagation.MapCarrier{"traceparent": traceparent}))
	if !trace.SpanContextFromContext(ctx).IsValid() && stored.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, stored)
	}
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", a.Method),
		AttrDeliveryID.String(a.DeliveryID), AttrWebhookID.String(a.WebhookID), AttrEventID.String(a.EventID),
		AttrEventType.String(a.EventType), AttrAttempt.Int(a.Attempt),
	}
	if a.URL != "" {
		attrs = append(attrs, attribute.String("url.full", a.URL))
		if u, err := url.Parse(a.URL); err == nil {
			host, port := u.Hostname(), u.Port()
			if port == "" {
				port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
			}
			attrs = append(attrs, attribute.String("server.address", host))
			if p, err := strconv.Atoi(port); err == nil {
				attrs = append(attrs, attribute.Int("server.port", p))
			}
		}
	}
	if a.Attempt > 1 {
		attrs = append(attrs, attribute.Int("http.request.resend_count", a.Attempt-1))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}
	if stored.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: stored}))
	}
	ctx, span := t.tracer.Start(ctx, a.Method, opts...)
	return ctx, func(e webhooks.AttemptEnd) {
		if e.StatusCode > 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", e.StatusCode))
		}
		if e.Abandoned {
			span.SetAttributes(AttrAbandoned.Bool(true))
		}
		if webhooks.AttemptOutcome(e.StatusCode, e.Error) != webhooks.OutcomeSuccess {
			errType := "_OTHER"
			if e.StatusCode > 0 {
				errType = strconv.Itoa(e.StatusCode)
			}
			span.SetAttributes(attribute.String("error.type", errType))
			span.SetStatus(codes.Error, e.Error)
		}
		span.End()
	}
}
