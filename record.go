package webhooks

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// A delivery record is one Redis string, created with SET NX by the claim script: the record is the
// pair's claim, so the two cannot outlive one another. Go encodes and decodes it; a script reads or
// rewrites only its fixed-width head:
//
//	[0, 16)  lease token (rdb.TokenLen hex digits) of the last attempt started
//	[16]     lease state: 'L' an attempt holds the lease, '+' its outcome is recorded, '-' no lease
//	[17]     status: 'p' pending, 's' success, 'f' failed
//	[18]     format version: rdb.RecordVersion, rdb.RecordVersionTraced when the body ends in a traceparent, or
//	         rdb.RecordVersionOrdered when it ends in a traceparent ("" for none) and an order key
//	[19, …)  varints: attempts, retry step, next attempt (ms), last status code, created (ms),
//	         updated (ms), expiry (ms); strings (uvarint length, bytes): webhook id, event id, event type,
//	         last error; uvarint count of attempts kept, then each attempt: varints at (ms),
//	         duration (µs), status code; strings error, response start; then, in rdb.RecordVersionTraced
//	         and rdb.RecordVersionOrdered only, the string traceparent (trace.go); then, in
//	         rdb.RecordVersionOrdered only, the string order key (Event.OrderKey, ordered.go)
//
// A record with no traceparent is written in rdb.RecordVersion, so replicas that know only that format
// still read every record of a Dispatcher with no Tracer; only an ordered event's records are written
// in rdb.RecordVersionOrdered, which replicas of earlier versions cannot read.
//
// A state change that only moves the lease (lease, unschedule) rewrites the head in Lua; every other
// one is a whole new value computed in Go from the record it holds the lease of, written only if the
// head still names that lease (the token is the condition of every conditional write).

// record is a delivery record as read from Redis.
type record struct {
	Delivery
	step       int       // retry step
	token      string    // lease token of the last attempt started
	leaseState byte      // rdb.LeaseHeld, rdb.LeaseSettled or rdb.LeaseNone
	leaseEnd   time.Time // when the lease expires (known to the holder only)
	raw        string    // the value this record was decoded from, "" when built in memory

	traceparent string // W3C trace context of the call that created it, "" for none (trace.go)
}

// statusCodes are the statuses as the record's head spells them.
var statusCodes = [...]struct {
	status Status
	code   byte
}{{StatusPending, rdb.StatusPending}, {StatusSuccess, rdb.StatusSuccess}, {StatusFailed, rdb.StatusFailed}}

// statusCode is the byte that spells s in a record's head (0 for no status).
func statusCode(s Status) byte {
	for _, c := range statusCodes {
		if c.status == s {
			return c.code
		}
	}
	return 0
}

// holdLease marks the record leased under token until end, for an attempt about to be made.
func (r *record) holdLease(token string, end time.Time) {
	r.token, r.leaseState, r.leaseEnd = token, rdb.LeaseHeld, end
}

// heldToken is the lease token an attempt holds, "" when none does.
func (r *record) heldToken() string {
	if r.leaseState != rdb.LeaseHeld {
		return ""
	}
	return r.token
}

// encode is the record's stored value.
func (r *record) encode() string {
	b := make([]byte, 0, 96+len(r.WebhookID)+len(r.EventID)+len(r.EventType)+len(r.LastError)+32*len(r.History))
	b = append(b, r.token...)
	version := byte(rdb.RecordVersion)
	switch {
	case r.OrderKey != "":
		version = rdb.RecordVersionOrdered
	case r.traceparent != "":
		version = rdb.RecordVersionTraced
	}
	b = append(b, r.leaseState, statusCode(r.Status), version)
	var next int64
	if r.Status == StatusPending {
		next = unixMilli(r.NextAttemptAt)
	}
	for _, v := range []int64{int64(r.Attempts), int64(r.step), next, int64(r.LastStatusCode),
		unixMilli(r.CreatedAt), unixMilli(r.UpdatedAt), unixMilli(r.ExpiresAt)} {
		b = binary.AppendVarint(b, v)
	}
	for _, s := range []string{r.WebhookID, r.EventID, r.EventType, r.LastError} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(r.History)))
	for _, a := range r.History {
		b = binary.AppendVarint(b, unixMilli(a.At))
		b = binary.AppendVarint(b, a.Duration.Microseconds())
		b = binary.AppendVarint(b, int64(a.StatusCode))
		b = appendString(b, a.Error)
		b = appendString(b, a.Response)
	}
	if version != rdb.RecordVersion {
		b = appendString(b, r.traceparent)
	}
	if version == rdb.RecordVersionOrdered {
		b = appendString(b, r.OrderKey)
	}
	return string(b)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// recordReader decodes a record's body in place: the strings it returns share the record's memory.
// The first failure sticks.
type recordReader struct {
	s   string
	bad bool
}

// uint reads an unsigned varint as binary.Uvarint does, from a string.
func (rd *recordReader) uint() uint64 {
	var v uint64
	for i := 0; i < len(rd.s) && i < binary.MaxVarintLen64; i++ {
		c := rd.s[i]
		if i == binary.MaxVarintLen64-1 && c > 1 {
			break // overflows 64 bits
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			rd.s = rd.s[i+1:]
			return v
		}
	}
	rd.bad = true
	return 0
}

// int reads a signed (zig-zag) varint as binary.Varint does.
func (rd *recordReader) int() int64 {
	u := rd.uint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (rd *recordReader) string() string {
	l := rd.uint()
	if rd.bad || l > uint64(len(rd.s)) {
		rd.bad = true
		return ""
	}
	s := rd.s[:l]
	rd.s = rd.s[l:]
	return s
}

// parseRecord decodes a stored record.
func parseRecord(id, raw string) (*record, error) {
	corrupt := func(why string) error { return fmt.Errorf("%w: %s %s", ErrCorruptRecord, id, why) }
	if len(raw) < rdb.RecordHeadLen {
		return nil, corrupt("is too short")
	}
	version := raw[rdb.RecordHeadLen-1]
	if version != rdb.RecordVersion && version != rdb.RecordVersionTraced && version != rdb.RecordVersionOrdered {
		return nil, corrupt(fmt.Sprintf("has format %q", raw[rdb.RecordHeadLen-1]))
	}
	r := &record{Delivery: Delivery{ID: id}, token: raw[:rdb.TokenLen], leaseState: raw[rdb.TokenLen], raw: raw}
	switch r.leaseState {
	case rdb.LeaseHeld, rdb.LeaseSettled, rdb.LeaseNone:
	default:
		return nil, corrupt(fmt.Sprintf("has lease state %q", r.leaseState))
	}
	for _, c := range statusCodes {
		if raw[rdb.TokenLen+1] == c.code {
			r.Status = c.status
		}
	}
	if r.Status == "" {
		return nil, corrupt(fmt.Sprintf("has status %q", raw[rdb.TokenLen+1]))
	}
	rd := &recordReader{s: raw[rdb.RecordHeadLen:]}
	r.Attempts, r.step = int(rd.int()), int(rd.int())
	r.NextAttemptAt, r.LastStatusCode = msTime(rd.int()), int(rd.int())
	r.CreatedAt, r.UpdatedAt, r.ExpiresAt = msTime(rd.int()), msTime(rd.int()), msTime(rd.int())
	r.WebhookID, r.EventID, r.EventType, r.LastError = rd.string(), rd.string(), rd.string(), rd.string()
	kept := rd.uint()
	if rd.bad || kept > maxHistory {
		return nil, corrupt("has a bad attempt count")
	}
	for range kept {
		a := Attempt{At: msTime(rd.int())}
		if micros := rd.int(); micros > math.MaxInt64/int64(time.Microsecond) || micros < math.MinInt64/int64(time.Microsecond) {
			rd.bad = true // no time.Duration is that long
		} else {
			a.Duration = time.Duration(micros) * time.Microsecond
		}
		a.StatusCode = int(rd.int())
		a.Error, a.Response = rd.string(), rd.string()
		r.History = append(r.History, a)
	}
	if version != rdb.RecordVersion {
		r.traceparent = rd.string()
	}
	if version == rdb.RecordVersionOrdered {
		r.OrderKey = rd.string()
	}
	switch {
	case rd.bad || len(rd.s) != 0:
		return nil, corrupt("cannot be decoded")
	case r.WebhookID == "" || r.EventID == "":
		return nil, corrupt("lacks webhook or event id")
	case r.Attempts < 0 || r.step < 0:
		return nil, corrupt("has a negative count")
	}
	if r.Status != StatusPending {
		r.NextAttemptAt = time.Time{}
	}
	return r, nil
}

// apply updates an in-memory record as settle records o at now.
func (r *record) apply(o outcome, now time.Time) {
	if o.attempted {
		r.Attempts++
		r.History = append(r.History, o.attempt)
		if len(r.History) > maxHistory {
			r.History = r.History[len(r.History)-maxHistory:]
		}
	}
	r.Status, r.step, r.LastStatusCode, r.LastError = o.status, o.step, o.code, o.err
	r.NextAttemptAt = msTime(unixMilli(o.next)) // as stored: whole milliseconds, no monotonic reading
	r.UpdatedAt = msTime(now.UnixMilli())
	r.token, r.leaseState = o.token, rdb.LeaseSettled
}
