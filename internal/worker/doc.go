// Package worker is the library's worker machinery, as units with their own types: the worker's loop
// (Worker, worker.go: its lease loop, waits and backoff); its lease pass (Leaser, leaser*.go: the
// schedule's scan, the fair share of free slots among the webhooks due, parks, probes, and the lease
// of each shard's due deliveries in one script); its attempts (Attempter, attempter*.go: rate-limit
// waits, MaxConcurrency slots, refusals and parks, the request through the root's Send, ProcessDue's
// pass and Run's attempt slots, RunSlots); the attempt slots and the deliveries leased ahead (Slots,
// slots.go); what it knows of each shard's schedule between scans (ScanHints, scan_hints.go); how a
// pass shares its slots among the webhooks due (Turns, Share, turns.go); the in-flight slots that
// bound each webhook's attempts (InFlight, limits.go); the local hint of due deliveries (LocalDue,
// local_due.go); how a sleeping worker hears of what others make due (Listener, listener.go); the bodies of the events a Dispatcher left to its worker lately (Bodies, bodies.go);
// the worker's warnings about its Redis (RedisLog, redis_log.go); how the worker is woken (Wake,
// wake.go); its view of a Redis outage (Outage, outage.go); the outcomes kept for Redis through one
// (PendingOutcomes, pending_outcomes.go); the batches that record outcomes ending together in one round
// trip (OutcomeBatch, outcome_batch.go); what a lease gives an attempt (Take, LeasedDelivery,
// leased.go); what an attempt does to its delivery by the retry schedule (AttemptResult, Outcome,
// Decide, outcome.go); and the calls a Run makes for tests (Hooks).
//
// The root builds a Leaser and an Attempter over the Dispatcher's Redis and units (it keeps what is
// the Dispatcher's: the signed request, recording an outcome, the circuit's counts and their hooks),
// and Dispatcher.Run a Worker (Config) over them. Redis is reached through internal/rdb's typed calls.
package worker
