package breaker

import (
	"strconv"
	"strings"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// circuit is a webhook's circuit as stored (lib/circuit.lua writes it):
// "failures:since:openUntil:openFor:probeUntil:lastOK:lastFailed:f1,f2,…:token" (ms, 0 for none; the
// token last: any bytes); open when openFor > 0. lastOK is when the newest counted success was answered,
// lastFailed when the newest failure was, fails the send times of the failures sent after lastOK (the
// newest rdb.MaxBreakAfter, ascending), since the oldest send in the run. Integers that are not 1 to 15 ASCII digits (Lua holds 15 exactly) make it
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

// HealthOf is a circuit as stored (a field of the circuits hash, or a script's reply: nil, "" or
// corrupt read as closed, 0 failures), as seen at now.
func HealthOf(webhookID string, stored any, now time.Time) types.Health {
	s, _ := stored.(string)
	c, _ := decodeCircuit(s)
	h := types.Health{WebhookID: webhookID, State: types.CircuitClosed, ConsecutiveFailures: int(c.failures),
		FailingSince: rdb.MilliTime(c.since)}
	if c.openFor > 0 {
		h.State, h.OpenUntil, h.OpenFor = types.CircuitOpen, rdb.MilliTime(c.openUntil), time.Duration(c.openFor)*time.Millisecond
	}
	if c.openFor > 0 && c.probeUntil > now.UnixMilli() {
		h.State = types.CircuitProbing
	}
	return h
}
