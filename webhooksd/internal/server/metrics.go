package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/smartdrop/webhooks/promwebhooks"
)

// metrics are GET /metrics: the library's (promwebhooks: attempts, failed deliveries, the backlog),
// ingest's, every route's requests, and the Go runtime's and the process's.
//
//	webhooksd_ingest_requests_total{shape,code}          counter    POST /v1/events answers; shape is single,
//	                                                                 batch or none (did not decode)
//	webhooksd_ingest_request_duration_seconds{shape}     histogram  their duration
//	webhooksd_ingest_events_total{outcome}               counter    events: accepted, duplicate, invalid,
//	                                                                 conflict, unavailable, internal, refused
//	webhooksd_http_requests_total{route,code}            counter    every answer, by route
//	webhooksd_http_request_duration_seconds{route}       histogram  their duration
type metrics struct {
	reg             *prometheus.Registry
	lib             *promwebhooks.Collector
	ingestRequests  *prometheus.CounterVec
	ingestDuration  *prometheus.HistogramVec
	ingestEvents    *prometheus.CounterVec
	httpRequests    *prometheus.CounterVec
	httpDuration    *prometheus.HistogramVec
	ingestShapes    map[string]prometheus.Observer
	ingestOutcomes  map[string]prometheus.Counter
	requestsByRoute map[string]*routeMetrics
}

// routeMetrics are one route's duration histogram, looked up once.
type routeMetrics struct {
	duration prometheus.Observer
	route    string
}

// latencyBuckets are the request duration histograms' buckets, in seconds.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// routes are the route labels of webhooksd_http_requests_total.
var routes = []string{"ingest", "portal_tokens", "openapi", "healthz", "readyz", "metrics", "admin", "ui", "portal", "other"}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), lib: promwebhooks.New(promwebhooks.Options{}),
		ingestRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "webhooksd", Name: "ingest_requests_total",
			Help: "POST /v1/events answers, by shape (single, batch, none: did not decode) and status code."}, []string{"shape", "code"}),
		ingestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "webhooksd", Name: "ingest_request_duration_seconds",
			Help: "Duration of POST /v1/events requests, by shape.", Buckets: latencyBuckets}, []string{"shape"}),
		ingestEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "webhooksd", Name: "ingest_events_total",
			Help: "Events sent to POST /v1/events, by outcome: accepted, duplicate, invalid, conflict, unavailable, internal, refused."},
			[]string{"outcome"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "webhooksd", Name: "http_requests_total",
			Help: "HTTP answers, by route and status code."}, []string{"route", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "webhooksd", Name: "http_request_duration_seconds",
			Help: "Duration of HTTP requests, by route.", Buckets: latencyBuckets}, []string{"route"}),
		ingestShapes: map[string]prometheus.Observer{}, ingestOutcomes: map[string]prometheus.Counter{},
		requestsByRoute: map[string]*routeMetrics{},
	}
	for _, shape := range []string{"single", "batch", "none"} {
		m.ingestShapes[shape] = m.ingestDuration.WithLabelValues(shape)
	}
	for _, o := range []string{"accepted", "duplicate", "invalid", "conflict", "unavailable", "internal", "refused"} {
		m.ingestOutcomes[o] = m.ingestEvents.WithLabelValues(o)
	}
	for _, r := range routes {
		m.requestsByRoute[r] = &routeMetrics{duration: m.httpDuration.WithLabelValues(r), route: r}
	}
	m.reg.MustRegister(m.ingestRequests, m.ingestDuration, m.ingestEvents, m.httpRequests, m.httpDuration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe registers the library's collector once it observes a Dispatcher.
func (m *metrics) observe() { m.reg.MustRegister(m.lib) }

// Request counts an ingest answer (ingest.Observer).
func (m *metrics) Request(shape string, status int, took time.Duration) {
	m.ingestRequests.WithLabelValues(shape, strconv.Itoa(status)).Inc()
	if o := m.ingestShapes[shape]; o != nil {
		o.Observe(took.Seconds())
	}
}

// Events counts ingested events by outcome (ingest.Observer).
func (m *metrics) Events(outcome string, n int) {
	if c := m.ingestOutcomes[outcome]; c != nil && n > 0 {
		c.Add(float64(n))
	}
}

// served counts an answer of a route.
func (m *metrics) served(route string, status int, took time.Duration) {
	r := m.requestsByRoute[route]
	if r == nil {
		r = m.requestsByRoute["other"]
	}
	m.httpRequests.WithLabelValues(r.route, strconv.Itoa(status)).Inc()
	r.duration.Observe(took.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: nil})
}
