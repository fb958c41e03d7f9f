package webhooks

import (
	"github.com/smartdrop/webhooks/internal/worker"
)

// Outcomes that Redis could not take. An attempt whose outcome write fails in transport for its whole
// lease (Redis restarting, paused, unreachable) is kept here and written by Run once Redis answers:
// the write is conditional on the attempt's lease token, so it lands only if no other attempt of the
// delivery has leased it since, and the request is not repeated. After a pass of the worker fails, Run
// waits worker.OutageGrace once Redis answers again before it leases anything, writing what it kept
// first (worker.Outage). The outcomes kept, and their writing, are worker.PendingOutcomes'.

const (
	// MaxPendingOutcomes bounds the outcomes a Dispatcher keeps for Redis to take; more are dropped
	// (their deliveries are attempted again after their leases, as before).
	MaxPendingOutcomes = worker.MaxPendingOutcomes
	// MaxPendingOutcomeAge is how long a kept outcome is tried; then it is dropped.
	MaxPendingOutcomeAge = worker.MaxPendingOutcomeAge
)
