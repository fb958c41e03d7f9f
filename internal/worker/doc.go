// Package worker is the library's worker machinery, as units with their own types: the in-flight slots
// that bound each webhook's attempts (InFlight, limits.go), the local hint of due deliveries (LocalDue,
// local_due.go), the bodies of the events a Dispatcher left to its worker lately (Bodies, bodies.go),
// the worker's warnings about its Redis (RedisLog, redis_log.go), how the worker is woken (Wake,
// wake.go), its view of a Redis outage (Outage, outage.go) and the calls a Run makes for tests
// (Hooks). The root's Dispatcher.Run drives them.
package worker
