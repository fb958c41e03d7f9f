package types

// ReplayPage is what one ReplayMissingPage call did.
type ReplayPage struct {
	// Scheduled is how many deliveries the call created, each due at once for the worker.
	Scheduled int
	// Next continues the replay: pass it to the next call (with the same webhook and since); "" when
	// the replay is complete.
	Next string
}
