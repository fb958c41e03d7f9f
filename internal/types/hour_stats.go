package types

import "time"

// HourStats counts the attempts of one hour by outcome.
type HourStats struct {
	Hour    time.Time `json:"hour"` // the hour's start, UTC
	Success int64     `json:"success"`
	Failed  int64     `json:"failed"`
}
