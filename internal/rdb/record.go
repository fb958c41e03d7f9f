package rdb

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/smartdrop/webhooks/internal/types"
)

// A delivery record is one Redis string, created with SET NX by the claim script: the record is the
// pair's claim, so the two cannot outlive one another. Go encodes and decodes it; a script reads or
// rewrites only its fixed-width head:
//
//	[0, 16)  lease token (TokenLen hex digits) of the last attempt started
//	[16]     lease state: 'L' an attempt holds the lease, '+' its outcome is recorded, '-' no lease
//	[17]     status: 'p' pending, 's' success, 'f' failed
//	[18]     format version: RecordVersion, RecordVersionTraced when the body ends in a traceparent, or
//	         RecordVersionOrdered when it ends in a traceparent ("" for none) and an order key
//	[19, …)  varints: attempts, retry step, next attempt (ms), last status code, created (ms),
//	         updated (ms), expiry (ms); strings (uvarint length, bytes): webhook id, event id, event type,
//	         last error; uvarint count of attempts kept, then each attempt: varints at (ms),
//	         duration (µs), status code; strings error, response start; then, in RecordVersionTraced
//	         and RecordVersionOrdered only, the string traceparent (internal/trace); then, in
//	         RecordVersionOrdered only, the string order key (Event.OrderKey, the root's ordered.go)
//
// A record with no traceparent is written in RecordVersion, so replicas that know only that format
// still read every record of a Dispatcher with no Tracer; only an ordered event's records are written
// in RecordVersionOrdered, which replicas of earlier versions cannot read.
//
// A state change that only moves the lease (lease, unschedule) rewrites the head in Lua; every other
// one is a whole new value computed in Go from the record it holds the lease of, written only if the
// head still names that lease (the token is the condition of every conditional write).

// MaxHistory is how many attempts a record keeps.
const MaxHistory = 10

// Record is a delivery record as read from Redis.
type Record struct {
	types.Delivery
	Step       int       // retry step
	Token      string    // lease token of the last attempt started
	LeaseState byte      // LeaseHeld, LeaseSettled or LeaseNone
	LeaseEnd   time.Time // when the lease expires (known to the holder only)
	Raw        string    // the value this record was decoded from, "" when built in memory

	Traceparent string // W3C trace context of the call that created it, "" for none
}

// statusCodes are the statuses as the record's head spells them.
var statusCodes = [...]struct {
	status types.Status
	code   byte
}{{types.StatusPending, StatusPending}, {types.StatusSuccess, StatusSuccess}, {types.StatusFailed, StatusFailed},
	{types.StatusSkipped, StatusSkipped}}

// statusCode is the byte that spells s in a record's head (0 for no status).
func statusCode(s types.Status) byte {
	for _, c := range statusCodes {
		if c.status == s {
			return c.code
		}
	}
	return 0
}

// HoldLease marks the record leased under token until end, for an attempt about to be made.
func (r *Record) HoldLease(token string, end time.Time) {
	r.Token, r.LeaseState, r.LeaseEnd = token, LeaseHeld, end
}

// HeldToken is the lease token an attempt holds, "" when none does.
func (r *Record) HeldToken() string {
	if r.LeaseState != LeaseHeld {
		return ""
	}
	return r.Token
}

// Encode is the record's stored value.
func (r *Record) Encode() string {
	b := make([]byte, 0, 96+len(r.WebhookID)+len(r.EventID)+len(r.EventType)+len(r.LastError)+32*len(r.History))
	b = append(b, r.Token...)
	version := byte(RecordVersion)
	switch {
	case r.OrderKey != "":
		version = RecordVersionOrdered
	case r.Traceparent != "":
		version = RecordVersionTraced
	}
	b = append(b, r.LeaseState, statusCode(r.Status), version)
	var next int64
	if r.Status == types.StatusPending {
		next = UnixMilli(r.NextAttemptAt)
	}
	for _, v := range []int64{int64(r.Attempts), int64(r.Step), next, int64(r.LastStatusCode),
		UnixMilli(r.CreatedAt), UnixMilli(r.UpdatedAt), UnixMilli(r.ExpiresAt)} {
		b = binary.AppendVarint(b, v)
	}
	for _, s := range []string{r.WebhookID, r.EventID, r.EventType, r.LastError} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(r.History)))
	for _, a := range r.History {
		b = binary.AppendVarint(b, UnixMilli(a.At))
		b = binary.AppendVarint(b, a.Duration.Microseconds())
		b = binary.AppendVarint(b, int64(a.StatusCode))
		b = appendString(b, a.Error)
		b = appendString(b, a.Response)
	}
	if version != RecordVersion {
		b = appendString(b, r.Traceparent)
	}
	if version == RecordVersionOrdered {
		b = appendString(b, r.OrderKey)
	}
	return string(b)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// UnixMilli is t as a record stores it: Unix milliseconds, 0 for the zero time.
func UnixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// MilliTime is the time a record stores as ms (UnixMilli's inverse).
func MilliTime(ms int64) time.Time {
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

// ParseRecord decodes a stored record.
func ParseRecord(id, raw string) (*Record, error) {
	corrupt := func(why string) error { return fmt.Errorf("%w: %s %s", types.ErrCorruptRecord, id, why) }
	if len(raw) < RecordHeadLen {
		return nil, corrupt("is too short")
	}
	version := raw[RecordHeadLen-1]
	if version != RecordVersion && version != RecordVersionTraced && version != RecordVersionOrdered {
		return nil, corrupt(fmt.Sprintf("has format %q", raw[RecordHeadLen-1]))
	}
	r := &Record{Delivery: types.Delivery{ID: id}, Token: raw[:TokenLen], LeaseState: raw[TokenLen], Raw: raw}
	switch r.LeaseState {
	case LeaseHeld, LeaseSettled, LeaseNone:
	default:
		return nil, corrupt(fmt.Sprintf("has lease state %q", r.LeaseState))
	}
	for _, c := range statusCodes {
		if raw[TokenLen+1] == c.code {
			r.Status = c.status
		}
	}
	if r.Status == "" {
		return nil, corrupt(fmt.Sprintf("has status %q", raw[TokenLen+1]))
	}
	rd := &recordReader{s: raw[RecordHeadLen:]}
	r.Attempts, r.Step = int(rd.int()), int(rd.int())
	r.NextAttemptAt, r.LastStatusCode = MilliTime(rd.int()), int(rd.int())
	r.CreatedAt, r.UpdatedAt, r.ExpiresAt = MilliTime(rd.int()), MilliTime(rd.int()), MilliTime(rd.int())
	r.WebhookID, r.EventID, r.EventType, r.LastError = rd.string(), rd.string(), rd.string(), rd.string()
	kept := rd.uint()
	if rd.bad || kept > MaxHistory {
		return nil, corrupt("has a bad attempt count")
	}
	for range kept {
		a := types.Attempt{At: MilliTime(rd.int())}
		if micros := rd.int(); micros > math.MaxInt64/int64(time.Microsecond) || micros < math.MinInt64/int64(time.Microsecond) {
			rd.bad = true // no time.Duration is that long
		} else {
			a.Duration = time.Duration(micros) * time.Microsecond
		}
		a.StatusCode = int(rd.int())
		a.Error, a.Response = rd.string(), rd.string()
		r.History = append(r.History, a)
	}
	if version != RecordVersion {
		r.Traceparent = rd.string()
	}
	if version == RecordVersionOrdered {
		r.OrderKey = rd.string()
	}
	switch {
	case rd.bad || len(rd.s) != 0:
		return nil, corrupt("cannot be decoded")
	case r.WebhookID == "" || r.EventID == "":
		return nil, corrupt("lacks webhook or event id")
	case r.Attempts < 0 || r.Step < 0:
		return nil, corrupt("has a negative count")
	}
	if r.Status != types.StatusPending {
		r.NextAttemptAt = time.Time{}
	}
	return r, nil
}

// Waiting is r as created behind its order key's head: pending, not leased, no next attempt.
func (r *Record) Waiting() *Record {
	w := *r
	w.LeaseState, w.LeaseEnd, w.NextAttemptAt = LeaseNone, MilliTime(0), MilliTime(0)
	return &w
}

// IsWaiting reports whether r is an ordered delivery waiting behind an earlier delivery of its key
// (Waiting's record: pending, not leased, no next attempt): not scheduled yet.
func (r *Record) IsWaiting() bool {
	return r.OrderKey != "" && r.Status == types.StatusPending && r.LeaseState == LeaseNone && r.NextAttemptAt.IsZero()
}
