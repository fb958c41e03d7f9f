// Package promwebhooks exports the metrics of github.com/smartdrop/webhooks to Prometheus: a
// prometheus.Collector of attempts, failed deliveries and the backlog. It is a module of its own, so
// the core library depends on no metrics package.
//
// Usage:
//
//	metrics := promwebhooks.New(promwebhooks.Options{})
//	d, err := webhooks.New(rdb, metrics.Instrument(opts)) // wraps opts.Hooks; yours still run
//	metrics.Observe(d)                                    // the backlog gauges read d.Stats at each scrape
//	prometheus.MustRegister(metrics)
//
// Metrics (the namespace "webhooks" can be changed in Options):
//
//	webhooks_attempts_total{outcome}           counter    recorded HTTP attempts; outcome is success (2xx),
//	                                                      http_error (another status) or error (no response)
//	webhooks_attempt_duration_seconds{outcome} histogram  their duration
//	webhooks_deliveries_failed_total           counter    deliveries failed for good
//	webhooks_due_deliveries                    gauge      due now, not leased
//	webhooks_scheduled_deliveries              gauge      retries, and deliveries parked by an open circuit
//	webhooks_leased_deliveries                 gauge      attempts in flight
//	webhooks_oldest_due_age_seconds            gauge      age of the oldest due delivery, 0 when none
//	webhooks_open_circuits                     gauge      webhooks whose circuit is open
//	webhooks_stats_truncated                   gauge      1 when the gauges are lower bounds (Stats' bounds)
//	webhooks_stats_errors_total                counter    scrapes whose Stats call failed
//
// The counters are per process (sum them over replicas); the gauges describe the shared backlog, so
// observe one Dispatcher per Redis. Each scrape costs one Dispatcher.Stats: a few dozen Redis
// commands, whatever the backlog.
package promwebhooks
