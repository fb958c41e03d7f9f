package worker

import (
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

const (
	// MaxRetryAfter bounds how far a Retry-After header (on a 429 or 503) can push a retry beyond its
	// scheduled delay.
	MaxRetryAfter = time.Hour
	// RetryJitter spreads each scheduled delay by ±20%.
	RetryJitter = 0.2
)

// AttemptResult is what one HTTP attempt saw.
type AttemptResult struct {
	At         time.Time
	Answered   time.Time // when the answer's head (or the error) came: the receiver's order, for the circuit
	Dur        time.Duration
	Code       int
	Err        string
	Body       string
	RetryAfter time.Duration
	Canceled   bool // not attempted in time, or the caller's context ended: not an outcome to record
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
	Answered   time.Time // when the attempt's answer came (AttemptResult.Answered)
	Disable    bool      // 410 Gone: disable the webhook
	Probe      string    // the circuit's probe token, when the attempt was its probe
	Unrecorded bool      // the caller's context ended mid-attempt: leave it to the lease
	Inline     bool      // the attempt was leased by the claim (its schedule entry is in the inline zset)
	Retime     bool      // its lease read its queue to the last due entry: a final outcome retimes the webhook
	Counted    bool      // its circuit count was sent when its attempt ended (countNow): settle sends none
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

// Decide turns an attempt into the record's next state at now, by the retry schedule; a retry whose
// lease would end after the record's retention fails instead.
func Decide(rec *rdb.Record, res AttemptResult, schedule []time.Duration, lease time.Duration, now time.Time) Outcome {
	o := Outcome{ID: rec.ID, Token: rec.HeldToken(), Code: res.Code, Err: res.Err, Attempted: true, Step: rec.Step,
		Unrecorded: res.Canceled, Answered: res.Answered,
		Attempt: types.Attempt{At: rdb.MilliTime(res.At.UnixMilli()), Duration: res.Dur.Truncate(time.Microsecond), StatusCode: res.Code,
			Error: res.Err, Response: res.Body}}
	switch {
	case res.Code >= 200 && res.Code < 300 && res.Err == "":
		o.Status = types.StatusSuccess
	case res.Code == http.StatusGone:
		o.Status, o.Disable = types.StatusFailed, true
		o.Err = "HTTP 410 Gone: the webhook was disabled"
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
