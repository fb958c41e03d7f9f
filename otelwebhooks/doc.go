// Package otelwebhooks instruments github.com/smartdrop/webhooks with OpenTelemetry: traces across
// retries, and metrics. It is a module of its own, so the core library depends on no telemetry
// package.
//
// Usage:
//
//	tel, err := otelwebhooks.New() // the global providers, like otelriver; or WithTracerProvider, WithMeterProvider
//	d, err := webhooks.New(rdb, tel.Instrument(opts))
//	err = tel.Observe(d) // the backlog gauges, read from d.Stats at each collection
//
// Traces. Instrument sets Options.Tracer. Dispatch and Enqueue start a producer span
// ("webhooks.dispatch", "webhooks.enqueue"), a child of the caller's span. Each delivery they create
// keeps that span's W3C traceparent in its record, so each HTTP attempt of it, inline or days later
// by a worker of any replica, is a client span ("POST") in the caller's trace: a child of ctx's span
// when there is one (inline), else of the stored one, and linked to the stored one. Attempt spans
// follow the HTTP client semantic conventions (http.request.method, url.full without user info or
// query, server.address, server.port, http.response.status_code, error.type,
// http.request.resend_count) and carry webhooks.delivery.id, webhooks.webhook.id, webhooks.event.id,
// webhooks.event.type and webhooks.attempt; never a secret nor a body. The request carries the
// attempt span's traceparent header, so the receiver can continue the trace.
//
// Metrics (meter ScopeName):
//
//	webhooks.attempts                    counter    {attempt}   recorded attempts, by webhooks.outcome
//	webhooks.attempt.duration            histogram  s           their duration, by webhooks.outcome
//	webhooks.deliveries.failed           counter    {delivery}  deliveries failed for good
//	webhooks.deliveries.due              gauge      {delivery}  due now, not leased (Stats)
//	webhooks.deliveries.scheduled        gauge      {delivery}  retries and parked (Stats)
//	webhooks.deliveries.leased           gauge      {delivery}  attempts in flight (Stats)
//	webhooks.deliveries.oldest_due.age   gauge      s           age of the oldest due delivery (Stats)
//	webhooks.circuits.open               gauge      {webhook}   open circuits (Stats)
//
// webhooks.outcome is success (2xx), http_error (another status) or error (no response). The counters
// come from Options.Hooks, which Instrument wraps (the hooks already set still run). Each collection
// of the gauges costs one Dispatcher.Stats: a few dozen Redis commands, whatever the backlog. With
// several replicas, Observe one Dispatcher per Redis: they all see the same backlog.
package otelwebhooks
