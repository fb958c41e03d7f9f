package types

import "time"

// HourStats counts the attempts of one hour by outcome, and the deliveries skipped.
type HourStats struct {
	Hour    time.Time `json:"hour"` // the hour's start, UTC
	Success int64     `json:"success"`
	Failed  int64     `json:"failed"`
	// Skipped counts the deliveries the webhook's transformation skipped that hour (not attempted).
	Skipped int64 `json:"skipped"`
}
