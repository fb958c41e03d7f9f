package breaker

import (
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"

	"github.com/redis/go-redis/v9"
)

// Outcome is one attempt's outcome as the circuit counts it.
type Outcome struct {
	WebhookID string
	Kind      string    // rdb.CountSuccess, rdb.CountFailure or rdb.CountRejected (Kind)
	Probe     string    // the probe token, when the attempt was its circuit's probe
	Answered  time.Time // when its answer (or its error) came; zero: the count's now
}

// Event is what rdb.Count did to one outcome's circuit.
type Event struct {
	Health         types.Health // the circuit after the outcome
	Opened, Closed bool         // it opened (or, a failed probe, reopened) the circuit; it closed an open one
}

// CountArgs are rdb.Count's keys and arguments for outs at now, with the Breaker's settings (off: the
// count never opens a circuit, and still keeps the run of failures).
func (b *Breaker) CountArgs(now time.Time, outs []Outcome) (keys []string, args []any) {
	return b.store.countArgs(now, b.breakAfter, b.breakFor, outs)
}

// Counted reads rdb.Count's reply cmd for outs at now (as CountArgs made them), and caches each
// circuit as the count left it.
func (b *Breaker) Counted(cmd *redis.Cmd, now time.Time, outs []Outcome) ([]Event, error) {
	events, err := countReply(cmd, now, outs)
	if err != nil {
		return nil, err
	}
	for _, ev := range events {
		b.cache.put(ev.Health, now)
	}
	return events, nil
}

// countArgs are rdb.Count's keys and arguments for outcomes at now. breakAfter < 0: never open.
func (s *store) countArgs(now time.Time, breakAfter int, breakFor time.Duration, outs []Outcome) ([]string, []any) {
	args := make([]any, 4, 4+countStride*len(outs))
	args[0], args[1], args[2], args[3] = now.UnixMilli(), max(breakAfter, 0), max(breakFor.Milliseconds(), 1), MaxBreakFor.Milliseconds()
	keys := []string{s.key}
	index := map[string]int{}
	for _, o := range outs {
		k, ok := index[o.WebhookID]
		if !ok {
			keys = append(keys, s.hourly(o.WebhookID))
			k = len(keys) - 1
			index[o.WebhookID] = k
		}
		answered := o.Answered
		if answered.IsZero() {
			answered = now
		}
		args = append(args, o.WebhookID, o.Kind, o.Probe, answered.UnixMilli(), k)
	}
	return keys, args
}

// countStride is how many of rdb.Count's arguments each outcome takes; its webhook's index is the last.
const countStride = 5

// countReply reads rdb.Count's reply for outs at now.
func countReply(cmd *redis.Cmd, now time.Time, outs []Outcome) ([]Event, error) {
	reply, err := cmd.Slice()
	if err == nil && len(reply) != 2*len(outs) {
		err = fmt.Errorf("reply %v", reply)
	}
	if err != nil {
		return nil, fmt.Errorf("webhooks: count outcomes in circuits: %w", err)
	}
	events := make([]Event, len(outs))
	for i, o := range outs {
		code, _ := reply[2*i].(int64)
		events[i] = Event{Health: HealthOf(o.WebhookID, reply[2*i+1], now), Opened: code == rdb.EventOpened,
			Closed: code == rdb.EventClosed}
	}
	return events, nil
}
