package rdb

import (
	"time"

	"github.com/smartdrop/webhooks/internal/types"
)

// OutcomeWrite is one outcome's part of an outcome script run (outcome.lua): the delivery, the lease
// token its attempt was made under, what the outcome leaves of it, and its record as the outcome
// leaves it.
type OutcomeWrite struct {
	ID, WebhookID, Token string
	Status               types.Status
	Next                 time.Time // the next attempt, pending only
	Mode                 string    // how the script takes its schedule entry: ScheduleQueued, ScheduleInline or ScheduleRetime
	Record               string    // the new record, encoded (Record.Encode)
}

// OutcomeRun is the keys and args of an outcome script run at now recording ws, outcomes of deliveries
// of one shard; the script replies one OutcomeRecorded or OutcomeLeaseLost per outcome. (The ordered
// outcome script takes these, its sequence keys and args after them.)
func OutcomeRun(k Keys, shard int, now time.Time, ws []OutcomeWrite) ([]string, []any) {
	keys := append(make([]string, 0, 2+2*len(ws)), k.Ready(shard), k.Inline(shard))
	args := append(make([]any, 0, 1+7*len(ws)), now.UnixMilli())
	for _, w := range ws {
		keys = append(keys, k.Delivery(shard, w.ID), k.Queue(shard, w.WebhookID))
		args = append(args, w.ID, w.Token, string(w.Status), UnixMilli(w.Next), w.WebhookID, w.Mode)
	}
	for _, w := range ws {
		args = append(args, w.Record)
	}
	return keys, args
}
