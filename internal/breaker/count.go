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
	Sent      time.Time // when its request was sent (Ticket.Sent: taken before it went out); zero: Answered
	// SeenOK is when the newest success this process counted for the webhook was answered (zero:
	// none), sent with a failure: Sends.SeenOK.
	SeenOK time.Time
	Ticket Ticket // the attempt's place in Sends (zero: none)
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
	for i, ev := range events {
		if outs[i].Kind != rdb.CountSkipped { // a skip's count reads no circuit
			b.cache.put(ev.Health, now)
		}
	}
	return events, nil
}

// countArgs are rdb.Count's keys and arguments for outcomes at now. breakAfter < 0: never open.
func (s *store) countArgs(now time.Time, breakAfter int, breakFor time.Duration, outs []Outcome) ([]string, []any) {
	args := make([]any, 4, 4+countStride*len(outs))
	args[0], args[1], args[2], args[3] = now.UnixMilli(), max(breakAfter, 0), max(breakFor.Milliseconds(), 1), MaxBreakFor.Milliseconds()
	keys := []string{s.key, s.webhooks}
	index := map[string]int{}
	for _, o := range outs {
		k, ok := index[o.WebhookID]
		if !ok {
			keys = append(keys, s.hourly(o.WebhookID))
			k = len(keys) - 1
			index[o.WebhookID] = k
		}
		answered, sent := o.stamps(now)
		seenOK := int64(0)
		if !o.SeenOK.IsZero() {
			seenOK = o.SeenOK.UnixMilli()
		}
		args = append(args, o.WebhookID, o.Kind, o.Probe, answered, sent, seenOK, k)
	}
	return keys, args
}

// stamps are o's answer and send times (ms) as rdb.Count takes them: a zero Answered is now, a zero
// Sent is the answer's, and an answer never comes before its send (Ticket.Sent may be later than the
// clock: Sends).
func (o Outcome) stamps(now time.Time) (answered, sent int64) {
	if o.Answered.IsZero() {
		o.Answered = now
	}
	answered, sent = o.Answered.UnixMilli(), o.Sent.UnixMilli()
	if o.Sent.IsZero() {
		sent = answered
	}
	return max(answered, sent), sent
}

// countStride is how many of rdb.Count's arguments each outcome takes; its webhook's index is the last.
const countStride = 7

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
