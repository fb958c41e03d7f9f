package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/smartdrop/webhooks/internal/endpoint"
	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/smartdrop/webhooks/internal/signing"
)

// attemptResult is what one HTTP attempt saw.
type attemptResult struct {
	at         time.Time
	answered   time.Time // when the answer's head (or the error) came: the receiver's order, for the circuit
	dur        time.Duration
	code       int
	err        string
	body       string
	retryAfter time.Duration
	canceled   bool // not attempted in time, or the caller's context ended: not an outcome to record
}

// responseHeads holds the buffers that keep the start of a response body.
var responseHeads = sync.Pool{New: func() any { return new([maxHistoryBody]byte) }}

// leaseLeftToAttempt is how much of its lease a delivery must have left for an attempt to start: the
// whole attempt (Options.Timeout) and half the lease's margin beyond it.
func (d *Dispatcher) leaseLeftToAttempt() time.Duration {
	return d.opts.Timeout + (d.lease-d.opts.Timeout)/2
}

// attempt sends one signed request for a leased delivery. It is made only if a whole attempt
// (Options.Timeout) still ends with a margin before the lease does, so a worker that takes the
// delivery over after the lease can never overlap it.
func (d *Dispatcher) attempt(ctx context.Context, wh *storedWebhook, rec *rdb.Record, body []byte) attemptResult {
	start := d.now()
	res := attemptResult{at: start}
	if rec.LeaseEnd.Sub(start) < d.leaseLeftToAttempt() {
		// A whole attempt no longer fits in the lease (the claim's reply, or the pass before it, was
		// slow): leave it to a worker after the lease rather than cut it short.
		res.err, res.canceled = "too little of the lease was left to attempt it", true
		return res
	}
	secrets, err := signingKeys(wh, start)
	if err != nil {
		res.err = "webhook secret is unusable: " + err.Error()
		return res
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, wh.URL, bytes.NewReader(body))
	if err != nil {
		res.err = "bad request: " + err.Error()
		return res
	}
	req.Header = make(http.Header, 6+len(wh.Headers))
	endpoint.SetHeaders(req.Header, wh.Headers) // first: the library's own headers cannot be overridden
	req.Header["Content-Type"], req.Header["User-Agent"] = []string{"application/json"}, []string{userAgent}
	signing.SetHeaders(req.Header, rec.ID, start, body, secrets...)
	d.setTraceparent(ctx, req.Header, rec)
	resp, err := d.auth.Send(ctx, req, wh.ID, wh.Auth) // with the webhook's endpoint authentication
	res.answered = d.now()
	res.dur = res.answered.Sub(start)
	if err != nil {
		res.canceled = parent.Err() != nil
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may carry credentials in its query: keep it out of records
		}
		res.err = err.Error()
		return res
	}
	defer resp.Body.Close()
	res.code = resp.StatusCode
	head := responseHeads.Get().(*[maxHistoryBody]byte)
	n, _ := io.ReadFull(resp.Body, head[:])
	res.body = string(head[:n])
	responseHeads.Put(head)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBody-int64(n)))
	res.dur = d.now().Sub(start)
	switch {
	case res.code >= 200 && res.code < 300:
	case res.code >= 300 && res.code < 400:
		res.err = fmt.Sprintf("HTTP %d redirect to %q not followed", res.code, resp.Header.Get("Location"))
	default:
		res.err = "HTTP " + strconv.Itoa(res.code)
		if res.code == http.StatusTooManyRequests || res.code == http.StatusServiceUnavailable {
			res.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), start)
		}
	}
	return res
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(min(s, int(MaxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), MaxRetryAfter)
	}
	return 0
}

// outcome is what an attempt (or a refusal to attempt) does to a delivery record.
type outcome struct {
	id, token  string
	status     Status
	next       time.Time // pending only
	step       int
	code       int
	err        string
	attempted  bool
	attempt    Attempt
	answered   time.Time // when the attempt's answer came (attemptResult.answered)
	disable    bool      // 410 Gone: disable the webhook
	probe      string    // the circuit's probe token, when the attempt was its probe
	unrecorded bool      // the caller's context ended mid-attempt: leave it to the lease
	inline     bool      // the attempt was leased by the claim (its schedule entry is in the inline zset)
	retime     bool      // its lease read its queue to the last due entry: a final outcome retimes the webhook
	counted    bool      // its circuit count was sent when its attempt ended (countNow): settle sends none
	// pendingSince is when Redis first failed to take it (pending_outcomes.go); zero until then.
	pendingSince time.Time
}

// scheduleMode is how rdb.Outcome takes o's schedule entry.
func (o outcome) scheduleMode() string {
	switch {
	case o.inline:
		return rdb.ScheduleInline
	case o.retime:
		return rdb.ScheduleRetime
	}
	return rdb.ScheduleQueued
}

// applyOutcome updates an in-memory record as settle records o at now.
func applyOutcome(r *rdb.Record, o outcome, now time.Time) {
	if o.attempted {
		r.Attempts++
		r.History = append(r.History, o.attempt)
		if len(r.History) > rdb.MaxHistory {
			r.History = r.History[len(r.History)-rdb.MaxHistory:]
		}
	}
	r.Status, r.Step, r.LastStatusCode, r.LastError = o.status, o.step, o.code, o.err
	r.NextAttemptAt = rdb.MilliTime(rdb.UnixMilli(o.next)) // as stored: whole milliseconds, no monotonic reading
	r.UpdatedAt = rdb.MilliTime(now.UnixMilli())
	r.Token, r.LeaseState = o.token, rdb.LeaseSettled
}

// decide turns an attempt into the record's next state, by the retry schedule.
func (d *Dispatcher) decide(rec *rdb.Record, res attemptResult) outcome {
	o := outcome{id: rec.ID, token: rec.HeldToken(), code: res.code, err: res.err, attempted: true, step: rec.Step,
		unrecorded: res.canceled, answered: res.answered,
		attempt: Attempt{At: rdb.MilliTime(res.at.UnixMilli()), Duration: res.dur.Truncate(time.Microsecond), StatusCode: res.code,
			Error: res.err, Response: res.body}}
	switch {
	case res.code >= 200 && res.code < 300 && res.err == "":
		o.status = StatusSuccess
	case res.code == http.StatusGone:
		o.status, o.disable = StatusFailed, true
		o.err = "HTTP 410 Gone: the webhook was disabled"
	case rec.Step < len(d.opts.RetrySchedule):
		delay := jitter(d.opts.RetrySchedule[rec.Step])
		if res.retryAfter > delay {
			delay = min(res.retryAfter, MaxRetryAfter)
		}
		o.status, o.next, o.step = StatusPending, d.now().Add(delay), rec.Step+1
		if !rec.ExpiresAt.IsZero() && o.next.Add(d.lease).After(rec.ExpiresAt) {
			// Its record (its claim) would expire before the retry ends: fail it now, visibly,
			// rather than let it vanish.
			o.status, o.next = StatusFailed, time.Time{}
			o.err += "; failed: its record's retention ends before the next attempt"
		}
	default:
		o.status = StatusFailed
	}
	return o
}

// refuse is the outcome of a due delivery that is not attempted: it fails for the given reason.
func refuse(rec *rdb.Record, reason string) outcome {
	return outcome{id: rec.ID, token: rec.HeldToken(), status: StatusFailed, step: rec.Step, code: rec.LastStatusCode,
		err: reason}
}

func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 - RetryJitter + 2*RetryJitter*rand.Float64()))
}

// earliestLeaseEnd is when the first of the outcomes' leases ends (at most a lease from now): how long
// settle may retry their write.
func (d *Dispatcher) earliestLeaseEnd(now time.Time, recs []*rdb.Record, idx []int) time.Time {
	leaseEnd := now.Add(d.lease)
	for _, i := range idx {
		if e := recs[i].LeaseEnd; !e.IsZero() && e.Before(leaseEnd) {
			leaseEnd = e
		}
	}
	return leaseEnd
}

// applyRecorded applies each outcome the script recorded (reply, or err for the whole write) to its
// in-memory record and runs its hooks, and sets errs for the others.
func (d *Dispatcher) applyRecorded(ctx context.Context, shard int, recs []*rdb.Record, outcomes []outcome, idx []int,
	reply []int64, err error, now time.Time, errs []error) {
	for j, i := range idx {
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("webhooks: record outcome of %s (%w): %w", outcomes[i].id, ErrDeferred, err)
		case reply[j] != rdb.OutcomeRecorded:
			errs[i] = fmt.Errorf("webhooks: record outcome of %s: %w", outcomes[i].id, ErrLeaseLost)
		default:
			applyOutcome(recs[i], outcomes[i], now)
			if outcomes[i].status == StatusPending {
				d.queueLocal(shard, recs[i].WebhookID, recs[i].ID, outcomes[i].next) // a retry for this worker
			}
			d.afterOutcome(ctx, recs[i], outcomes[i])
		}
	}
}

// settle records the outcomes of attempts on deliveries of one shard in one round trip, applies each
// recorded outcome to its in-memory record and runs the hooks. It returns one error per outcome, nil
// when recorded. An outcome whose attempt the caller abandoned is left to its lease.
func (d *Dispatcher) settle(ctx context.Context, shard int, recs []*rdb.Record, outcomes []outcome) []error {
	errs := make([]error, len(outcomes))
	keys := []string{d.keys.Ready(shard), d.keys.Inline(shard)}
	now := d.now()
	args := []any{now.UnixMilli()}
	values := make([]any, 0, len(outcomes))
	idx := make([]int, 0, len(outcomes))
	for i, o := range outcomes {
		if o.unrecorded {
			errs[i] = fmt.Errorf("webhooks: delivery %s: %s; a worker attempts it after its lease: %w", o.id, o.err, ErrDeferred)
			continue
		}
		next := *recs[i] // the record as the outcome leaves it; applied in memory once recorded
		next.History = slices.Clip(next.History)
		applyOutcome(&next, o, now)
		keys = append(keys, d.keys.Delivery(shard, o.id), d.keys.Queue(shard, recs[i].WebhookID))
		args = append(args, recs[i].ID, o.token, string(o.status), rdb.UnixMilli(o.next), recs[i].WebhookID, o.scheduleMode())
		values = append(values, next.Encode())
		idx = append(idx, i)
	}
	if len(idx) == 0 {
		return errs
	}
	script, keys, values, extra := d.outcomeScriptFor(shard, recs, idx, keys, values)
	// The attempt is over whatever the caller's context says now: record it, retrying a write that
	// failed in transport while the lease lasts (the script is idempotent by token; failover.go).
	ctx = context.WithoutCancel(ctx)
	leaseEnd := d.earliestLeaseEnd(now, recs, idx)
	var reply []int64
	count := d.countOutcomes(now, outcomes, recs, idx)
	var kept []int                                                       // outcomes Redis did not take within the lease: kept for Run (pending_outcomes.go)
	defer func() { d.keepPending(shard, recs, outcomes, kept, count) }() // after afterCount
	defer d.afterCount(ctx, count)
	err := d.retryWithinLease(ctx, leaseEnd, func(ctx context.Context) error {
		w := d.writeBesideCount(ctx, count, script, keys, append(args, values...)...)
		var err error
		if reply, err = w.Int64Slice(); err == nil && w.AckErr != nil {
			d.log.Warn("webhooks: outcome recorded but not acknowledged by its replicas", "shard", shard, "error", w.AckErr)
		}
		return err
	})
	if err != nil && rdb.Retryable(err) {
		kept = idx
	}
	if err == nil && len(reply) != len(idx)+extra {
		err = fmt.Errorf("unexpected reply of %d items", len(reply))
	}
	d.applyRecorded(ctx, shard, recs, outcomes, idx, reply, err, now, errs)
	if extra == 1 && err == nil && reply[len(reply)-1] > 0 {
		d.markShard(shard) // a final head queued its key's next delivery: send it at once
		d.wake.Poke()
	}
	return errs
}
