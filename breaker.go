package webhooks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
)

// circuit is a webhook's circuit as stored (lib/circuit.lua writes it):
// "failures:since:openUntil:openFor:probeUntil:lastOK:lastFailed:f1,f2,…:token" (ms, 0 for none; the
// token last: any bytes); open when openFor > 0. lastOK is when the newest counted success was answered,
// lastFailed the newest failure, fails the answer times of the failures answered after lastOK (the newest
// rdb.MaxBreakAfter, ascending). Integers that are not 1 to 15 ASCII digits (Lua holds 15 exactly) make it
// corrupt: Go and the scripts read it as closed, 0 failures; a failure replaces it.
type circuit struct {
	failures, since, openUntil, openFor, probeUntil, lastOK, lastFailed int64
	fails                                                               []int64
	token                                                               string
}

// decodeCircuit parses a stored circuit (the scripts write it); ok is false when it is corrupt.
func decodeCircuit(s string) (c circuit, ok bool) {
	var f [7]int64
	for i := range f {
		j := strings.IndexByte(s, ':')
		if j < 1 || !isDigits15(s[:j]) {
			return circuit{}, false
		}
		f[i], _ = strconv.ParseInt(s[:j], 10, 64)
		s = s[j+1:]
	}
	j := strings.IndexByte(s, ':')
	if j < 0 {
		return circuit{}, false
	}
	var fails []int64
	if j > 0 {
		for p := range strings.SplitSeq(s[:j], ",") {
			if !isDigits15(p) || len(fails) == rdb.MaxBreakAfter {
				return circuit{}, false
			}
			n, _ := strconv.ParseInt(p, 10, 64)
			fails = append(fails, n)
		}
	}
	return circuit{failures: f[0], since: f[1], openUntil: f[2], openFor: f[3], probeUntil: f[4], lastOK: f[5],
		lastFailed: f[6], fails: fails, token: s[j+1:]}, true
}

// isDigits15 reports whether s is 1 to 15 ASCII digits.
func isDigits15(s string) bool {
	return len(s) >= 1 && len(s) <= 15 && strings.Trim(s, "0123456789") == ""
}

// circuitHealth is a stored circuit v as seen at now (nil, "" or corrupt: closed, 0 failures).
func circuitHealth(webhookID string, v any, now time.Time) Health {
	s, _ := v.(string)
	c, _ := decodeCircuit(s)
	h := Health{WebhookID: webhookID, State: CircuitClosed, ConsecutiveFailures: int(c.failures), FailingSince: rdb.MilliTime(c.since)}
	if c.openFor > 0 {
		h.State, h.OpenUntil, h.OpenFor = CircuitOpen, rdb.MilliTime(c.openUntil), time.Duration(c.openFor)*time.Millisecond
	}
	if c.openFor > 0 && c.probeUntil > now.UnixMilli() {
		h.State = CircuitProbing
	}
	return h
}

// circuitStore keeps the webhooks' circuit breakers in Redis (key circuitsKey), shared by all replicas.
type circuitStore struct {
	rdb    redis.UniversalClient
	key    string              // {P:registry}:circuits
	hourly func(string) string // a webhook's hourly counters, {P:registry}:hourly:<webhook id> (hourly.go)
}

// newCircuitStore is the circuits of a keyspace.
func newCircuitStore(rdb redis.UniversalClient, keys rdb.Keys) *circuitStore {
	return &circuitStore{rdb: rdb, key: keys.Circuits(), hourly: keys.Hourly}
}

// countedOutcome is one attempt's outcome as the circuit counts it.
type countedOutcome struct {
	webhookID string
	kind      string    // rdb.CountSuccess, rdb.CountFailure or rdb.CountRejected
	probe     string    // the probe token, when the attempt was its circuit's probe
	answered  time.Time // when its answer (or its error) came; zero: the count's now
}

// circuitEvent is what rdb.Count did to one outcome's circuit.
type circuitEvent struct {
	health         Health // the circuit after the outcome
	opened, closed bool
}

// countArgs are rdb.Count's keys and arguments for outcomes at now. breakAfter < 0: never open.
func (s *circuitStore) countArgs(now time.Time, breakAfter int, breakFor time.Duration, outs []countedOutcome) ([]string, []any) {
	args := make([]any, 4, 4+countStride*len(outs))
	args[0], args[1], args[2], args[3] = now.UnixMilli(), max(breakAfter, 0), max(breakFor.Milliseconds(), 1), MaxBreakFor.Milliseconds()
	keys := []string{s.key}
	index := map[string]int{}
	for _, o := range outs {
		k, ok := index[o.webhookID]
		if !ok {
			keys = append(keys, s.hourly(o.webhookID))
			k = len(keys) - 1
			index[o.webhookID] = k
		}
		answered := o.answered
		if answered.IsZero() {
			answered = now
		}
		args = append(args, o.webhookID, o.kind, o.probe, answered.UnixMilli(), k)
	}
	return keys, args
}

// countStride is how many of rdb.Count's arguments each outcome takes; its webhook's index is the last.
const countStride = 5

// mergeCounts returns batch with its rdb.Count calls merged into one, in their order (the first's
// place), so that the outcomes of concurrent settles sent together read and write each webhook's
// circuit and hourly counters once; the merged call runs at the latest of their nows. split, called
// once the batch's replies are in, gives each merged call its part of the reply (or the error).
func mergeCounts(batch []*rdb.ScriptCall) ([]*rdb.ScriptCall, func()) {
	var counts []*rdb.ScriptCall
	for _, c := range batch {
		if c.Script == rdb.Count {
			counts = append(counts, c)
		}
	}
	if len(counts) < 2 {
		return batch, func() {}
	}
	for _, c := range counts {
		if !countMergeable(c, counts[0]) {
			return batch, func() {}
		}
	}
	keys := []string{counts[0].Keys[0]}
	args := slices.Clone(counts[0].Args[:4])
	index := map[string]int{}
	sizes := make([]int, len(counts))
	for i, c := range counts {
		args[0] = max(args[0].(int64), c.Args[0].(int64))
		for a := 4; a+countStride-1 < len(c.Args); a += countStride {
			hourly := c.Keys[c.Args[a+countStride-1].(int)]
			k, ok := index[hourly]
			if !ok {
				keys = append(keys, hourly)
				k = len(keys) - 1
				index[hourly] = k
			}
			args = append(args, c.Args[a:a+countStride-1]...)
			args = append(args, k)
			sizes[i]++
		}
	}
	merged := &rdb.ScriptCall{Ctx: context.WithoutCancel(counts[0].Ctx), Script: rdb.Count, Keys: keys, Args: args}
	out := make([]*rdb.ScriptCall, 0, len(batch)-len(counts)+1)
	for _, c := range batch {
		switch {
		case c == counts[0]:
			out = append(out, merged)
		case c.Script != rdb.Count:
			out = append(out, c)
		}
	}
	return out, func() {
		if merged.Cmd == nil {
			return // not sent (a panic): the batch's callers get errBatchAborted
		}
		reply, err := merged.Cmd.Slice()
		if err == nil && len(reply) != 2*len(args[4:])/countStride {
			err = fmt.Errorf("merged count: reply of %d items", len(reply))
		}
		for i, c := range counts {
			c.Cmd = redis.NewCmd(c.Ctx)
			if err != nil {
				c.Cmd.SetErr(err)
				continue
			}
			c.Cmd.SetVal(reply[:2*sizes[i]])
			reply = reply[2*sizes[i]:]
		}
	}
}

// countMergeable reports whether a rdb.Count call is as countArgs makes it, with first's key and
// settings: only such calls are merged.
func countMergeable(c, first *rdb.ScriptCall) bool {
	if len(c.Keys) < 1 || c.Keys[0] != first.Keys[0] || len(c.Args) < 4 || (len(c.Args)-4)%countStride != 0 {
		return false
	}
	if _, ok := c.Args[0].(int64); !ok {
		return false
	}
	for i := 1; i < 4; i++ {
		if c.Args[i] != first.Args[i] {
			return false
		}
	}
	for a := 4 + countStride - 1; a < len(c.Args); a += countStride {
		if k, ok := c.Args[a].(int); !ok || k < 1 || k >= len(c.Keys) {
			return false
		}
	}
	return true
}

// countReply reads rdb.Count's reply for outs at now.
func countReply(cmd *redis.Cmd, now time.Time, outs []countedOutcome) ([]circuitEvent, error) {
	reply, err := cmd.Slice()
	if err == nil && len(reply) != 2*len(outs) {
		err = fmt.Errorf("reply %v", reply)
	}
	if err != nil {
		return nil, fmt.Errorf("webhooks: count outcomes in circuits: %w", err)
	}
	events := make([]circuitEvent, len(outs))
	for i, o := range outs {
		code, _ := reply[2*i].(int64)
		events[i] = circuitEvent{health: circuitHealth(o.webhookID, reply[2*i+1], now), opened: code == rdb.EventOpened,
			closed: code == rdb.EventClosed}
	}
	return events, nil
}

// acquireProbe asks for webhookID's probe under token (not empty). ok when the circuit is open, its
// open period has ended and no probe is held (or the held one's holdFor has passed): the caller may send
// one attempt, and report its outcome with this token (the probe's until another caller acquires one).
func (s *circuitStore) acquireProbe(ctx context.Context, webhookID string, now time.Time, token string, holdFor time.Duration) (ok bool, h Health, err error) {
	reply, err := rdb.AcquireProbe.Run(ctx, s.rdb, []string{s.key}, webhookID, now.UnixMilli(), token, max(holdFor.Milliseconds(), 1)).Slice()
	if err != nil || len(reply) != 2 {
		return false, Health{}, fmt.Errorf("webhooks: acquire probe of circuit of %s: %w", webhookID, cmp.Or(err, fmt.Errorf("reply %v", reply)))
	}
	code, _ := reply[0].(int64)
	return code == rdb.ProbeGranted, circuitHealth(webhookID, reply[1], now), nil
}

// read returns the circuits of webhookIDs at now in one HMGET; one not stored is closed, 0 failures.
func (s *circuitStore) read(ctx context.Context, now time.Time, webhookIDs ...string) (map[string]Health, error) {
	out, vals, err := make(map[string]Health, len(webhookIDs)), []any(nil), error(nil)
	if len(webhookIDs) > 0 { // HMGET needs a field
		vals, err = s.rdb.HMGet(ctx, s.key, webhookIDs...).Result()
	}
	if err != nil {
		return nil, fmt.Errorf("webhooks: read circuits: %w", err)
	}
	for i, id := range webhookIDs {
		out[id] = circuitHealth(id, vals[i], now)
	}
	return out, nil
}

// forget deletes webhookID's circuit (for a webhook deleted while failing).
func (s *circuitStore) forget(ctx context.Context, webhookID string) error {
	return s.rdb.HDel(ctx, s.key, webhookID).Err()
}
