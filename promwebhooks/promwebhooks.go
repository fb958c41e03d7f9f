package promwebhooks

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/smartdrop/webhooks"
)

// DefaultBuckets are the attempt duration histogram's buckets, in seconds.
var DefaultBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Options configure a Collector. The zero value is fine.
type Options struct {
	// Namespace prefixes every metric name. Defaults to "webhooks".
	Namespace string
	// ConstLabels are added to every metric.
	ConstLabels prometheus.Labels
	// Buckets of the attempt duration histogram. Defaults to DefaultBuckets.
	Buckets []float64
	// StatsTimeout bounds the Dispatcher.Stats call of each collection. Defaults to 5s.
	StatsTimeout time.Duration
}

// Collector is a prometheus.Collector of a Dispatcher's attempts, failed deliveries and backlog.
// Instrument puts its hooks in a Dispatcher's Options; Observe names the Dispatcher whose Stats the
// backlog gauges read at each collection.
type Collector struct {
	timeout  time.Duration
	attempts *prometheus.CounterVec
	duration *prometheus.HistogramVec
	failed   prometheus.Counter

	due, scheduled, leased, oldest, open, truncated *prometheus.Desc
	statsErrors                                     prometheus.Counter

	mu sync.Mutex
	d  *webhooks.Dispatcher
}

var _ prometheus.Collector = (*Collector)(nil)

// New makes a Collector. Register it (prometheus.MustRegister) once it observes a Dispatcher; before
// that it reports the counters only.
func New(opts Options) *Collector {
	ns := opts.Namespace
	if ns == "" {
		ns = "webhooks"
	}
	if opts.Buckets == nil {
		opts.Buckets = DefaultBuckets
	}
	if opts.StatsTimeout <= 0 {
		opts.StatsTimeout = 5 * time.Second
	}
	cl := opts.ConstLabels
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, "", name), help, nil, cl)
	}
	return &Collector{
		timeout: opts.StatsTimeout,
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "attempts_total", ConstLabels: cl,
			Help: "HTTP attempts recorded, by outcome: success (2xx), http_error (another status), error (no response)."},
			[]string{"outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "attempt_duration_seconds",
			ConstLabels: cl, Buckets: opts.Buckets, Help: "Duration of recorded HTTP attempts, by outcome."},
			[]string{"outcome"}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "deliveries_failed_total", ConstLabels: cl,
			Help: "Deliveries failed for good: retries ran out, 410 Gone, webhook deleted or disabled."}),
		statsErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "stats_errors_total", ConstLabels: cl,
			Help: "Collections whose Dispatcher.Stats call failed (the backlog gauges were left out)."}),
		due:       desc("due_deliveries", "Deliveries due now and not leased."),
		scheduled: desc("scheduled_deliveries", "Deliveries scheduled for later: retries, and deliveries parked by an open circuit."),
		leased:    desc("leased_deliveries", "Deliveries leased: attempts in flight."),
		oldest:    desc("oldest_due_age_seconds", "Age of the oldest due delivery, 0 when none is due."),
		open:      desc("open_circuits", "Webhooks whose circuit is open."),
		truncated: desc("stats_truncated", "1 when the backlog was larger than Stats examines: the gauges are lower bounds."),
	}
}

// Instrument returns opts with its Hooks wrapped to count attempts and failed deliveries (the hooks
// opts had still run).
func (c *Collector) Instrument(opts webhooks.Options) webhooks.Options {
	opts.Hooks = c.Hooks(opts.Hooks)
	return opts
}

// Hooks returns next with AttemptFinished and DeliveryFailed wrapped to update the metrics.
func (c *Collector) Hooks(next webhooks.Hooks) webhooks.Hooks {
	h := next
	h.AttemptFinished = func(a webhooks.AttemptInfo) {
		o := webhooks.AttemptOutcome(a.StatusCode, a.Error)
		c.attempts.WithLabelValues(o).Inc()
		c.duration.WithLabelValues(o).Observe(a.Duration.Seconds())
		if next.AttemptFinished != nil {
			next.AttemptFinished(a)
		}
	}
	h.DeliveryFailed = func(dl webhooks.Delivery) {
		c.failed.Inc()
		if next.DeliveryFailed != nil {
			next.DeliveryFailed(dl)
		}
	}
	return h
}

// Observe makes the backlog gauges read d.Stats at each collection (one Stats call per scrape: a few
// dozen Redis commands, whatever the backlog). With several replicas on one Redis, observe one
// Dispatcher in one of them: they all see the same backlog.
func (c *Collector) Observe(d *webhooks.Dispatcher) {
	c.mu.Lock()
	c.d = d
	c.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.attempts.Describe(ch)
	c.duration.Describe(ch)
	c.failed.Describe(ch)
	c.statsErrors.Describe(ch)
	for _, d := range []*prometheus.Desc{c.due, c.scheduled, c.leased, c.oldest, c.open, c.truncated} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	d := c.d
	c.mu.Unlock()
	if d != nil {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		st, err := d.Stats(ctx)
		cancel()
		if err != nil {
			c.statsErrors.Inc()
		} else {
			truncated := 0.0
			if st.Truncated {
				truncated = 1
			}
			for _, m := range []struct {
				d *prometheus.Desc
				v float64
			}{{c.due, float64(st.Due)}, {c.scheduled, float64(st.Scheduled)}, {c.leased, float64(st.Leased)},
				{c.oldest, st.OldestDueAge.Seconds()}, {c.open, float64(st.OpenCircuits)}, {c.truncated, truncated}} {
				ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, m.v)
			}
		}
	}
	c.attempts.Collect(ch)
	c.duration.Collect(ch)
	c.failed.Collect(ch)
	c.statsErrors.Collect(ch)
}
