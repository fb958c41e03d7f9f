package worker

import (
	"math/rand/v2"
	"time"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

const (
	// MaxRetryAfter bounds how far a destination's RetryAfter (an HTTP Retry-After on a 429 or 503)
	// can push a retry beyond its scheduled delay.
	MaxRetryAfter = time.Hour
	// RetryJitter spreads each scheduled delay by ±20%.
	RetryJitter = 0.2
)

// AttemptResult is what one attempt through a destination saw.
type AttemptResult struct {
	At         time.Time
	Answered   time.Time // when the answer (or the error) came: the receiver's order, for the circuit
	Dur        time.Duration
	OK         bool             // the destination has the message
	Kind       destination.Kind // of a failure: what the engine does with it
	Code       int              // the answer's status (an HTTP destination's), 0 for none
	Err        string           // the failure in words
	Body       string           // the start of the answer
	RetryAfter time.Duration
	Canceled   bool // not attempted in time, or the caller's context ended: not an outcome to record
	Skipped    bool // the webhook's transformation skipped the event: nothing was sent
	NotSent    bool // the webhook's transformation failed on the event (Err says how): nothing was sent
	// Ticket is the attempt's place in the breaker's Sends, from just before its request went out
	// until its outcome is counted; zero when nothing was sent.
	Ticket breaker.Ticket
}

// Outcome is what an attempt (or a refusal to attempt) does to a delivery record.
type Outcome struct {
	ID, Token  string
	Status     types.Status
	Next       time.Time // pending only
	Step       int
	Code       int
	Err        string
	Attempted  bool
	Attempt    types.Attempt
	Answered   time.Time        // when the attempt's answer came (AttemptResult.Answered)
	Kind       destination.Kind // of a failed attempt (AttemptResult.Kind): how the circuit counts it
	Disable    bool             // the destination is gone (an HTTP 410): disable the webhook
	Probe      string           // the circuit's probe token, when the attempt was its probe
	Unrecorded bool             // the caller's context ended mid-attempt: leave it to the lease
	Inline     bool             // the attempt was leased by the claim (its schedule entry is in the inline zset)
	Retime     bool             // its lease read its queue to the last due entry: a final outcome retimes the webhook
	Counted    bool             // its circuit count was sent when its attempt ended (countNow), or is held back to be (breaker.Sends): settle sends none
	Ticket     breaker.Ticket   // the attempt's place in breaker.Sends (AttemptResult.Ticket)
	// PendingSince is when Redis first failed to take it (PendingOutcomes.Keep); zero until then.
	PendingSince time.Time
}

// ScheduleMode is how rdb.Outcome takes o's schedule entry.
func (o Outcome) ScheduleMode() string {
	switch {
	case o.Inline:
		return rdb.ScheduleInline
	case o.Retime:
		return rdb.ScheduleRetime
	}
	return rdb.ScheduleQueued
}

// Apply updates an in-memory record as settle records o at now.
func (o Outcome) Apply(r *rdb.Record, now time.Time) {
	if o.Attempted {
		r.Attempts++
		r.History = append(r.History, o.Attempt)
		if len(r.History) > rdb.MaxHistory {
			r.History = r.History[len(r.History)-rdb.MaxHistory:]
		}
	}
	r.Status, r.Step, r.LastStatusCode, r.LastError = o.Status, o.Step, o.Code, o.Err
	r.NextAttemptAt = rdb.MilliTime(rdb.UnixMilli(o.Next)) // as stored: whole milliseconds, no monotonic reading
	r.UpdatedAt = rdb.MilliTime(now.UnixMilli())
	r.Token, r.LeaseState = o.Token, rdb.LeaseSettled
}

// SkippedReason is the LastError of a delivery its webhook's transformation skipped.
const SkippedReason = "skipped: the webhook's transformation gave null for this event; nothing was sent"

// Decide turns an attempt into the record's next state at now, by the retry schedule; a retry whose
// lease would end after the record's retention fails instead.
func Decide(rec *rdb.Record, res AttemptResult, schedule []time.Duration, lease time.Duration, now time.Time) Outcome {
	o := Outcome{ID: rec.ID, Token: rec.HeldToken(), Code: res.Code, Err: res.Err, Attempted: true, Step: rec.Step,
		Unrecorded: res.Canceled, Answered: res.Answered, Kind: res.Kind, Ticket: res.Ticket,
		Attempt: types.Attempt{At: rdb.MilliTime(res.At.UnixMilli()), Duration: res.Dur.Truncate(time.Microsecond), StatusCode: res.Code,
			Error: res.Err, Response: res.Body}}
	switch {
	case res.Skipped:
		o.Status, o.Attempted, o.Err = types.StatusSkipped, false, SkippedReason
	case res.NotSent: // no attempt to record or count: it would fail the same way again
		o.Status, o.Attempted, o.Code = types.StatusFailed, false, rec.LastStatusCode
	case res.OK:
		o.Status = types.StatusSuccess
	case res.Kind == destination.Gone:
		o.Status, o.Disable = types.StatusFailed, true
		o.Err += ": the webhook was disabled"
	case res.Kind == destination.Permanent:
		o.Status = types.StatusFailed
	case rec.Step < len(schedule):
		delay := jitter(schedule[rec.Step])
		if res.RetryAfter > delay {
			delay = min(res.RetryAfter, MaxRetryAfter)
		}
		o.Status, o.Next, o.Step = types.StatusPending, now.Add(delay), rec.Step+1
		if !rec.ExpiresAt.IsZero() && o.Next.Add(lease).After(rec.ExpiresAt) {
			// Its record (its claim) would expire before the retry ends: fail it now, visibly,
			// rather than let it vanish.
			o.Status, o.Next = types.StatusFailed, time.Time{}
			o.Err += "; failed: its record's retention ends before the next attempt"
		}
	default:
		o.Status = types.StatusFailed
	}
	return o
}

// Refuse is the outcome of a due delivery that is not attempted: it fails for the given reason.
func Refuse(rec *rdb.Record, reason string) Outcome {
	return Outcome{ID: rec.ID, Token: rec.HeldToken(), Status: types.StatusFailed, Step: rec.Step, Code: rec.LastStatusCode,
		Err: reason}
}

// HandBack is the outcome of a leased delivery not attempted that goes back to its queue, due at next,
// its retry budget and last answer kept.
func HandBack(rec *rdb.Record, next time.Time) Outcome {
	return Outcome{ID: rec.ID, Token: rec.HeldToken(), Status: types.StatusPending, Next: next, Step: rec.Step,
		Code: rec.LastStatusCode, Err: rec.LastError}
}

// jitter spreads d by RetryJitter either way.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 - RetryJitter + 2*RetryJitter*rand.Float64()))
}

// EarliestLeaseEnd is when the first lease of the records idx of recs ends, at most limit (a lease
// from now): how long settle may retry the write of their outcomes.
func EarliestLeaseEnd(limit time.Time, recs []*rdb.Record, idx []int) time.Time {
	leaseEnd := limit
	for _, i := range idx {
		if e := recs[i].LeaseEnd; !e.IsZero() && e.Before(leaseEnd) {
			leaseEnd = e
		}
	}
	return leaseEnd
}
