// Package worker is the library's worker machinery, as units with their own types: the in-flight slots
// that bound each webhook's attempts (InFlight, limits.go) and the local cache of due deliveries
// (LocalDue, local_due.go). The root's Dispatcher.Run drives them.
package worker
