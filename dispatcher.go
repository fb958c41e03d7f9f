package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of Options.
const (
	DefaultKeyPrefix   = "webhooks"
	DefaultRetention   = 7 * 24 * time.Hour
	DefaultTimeout     = 15 * time.Second
	DefaultConcurrency = 64
)

const (
	// maxTimeout bounds Options.Timeout.
	maxTimeout = 5 * time.Minute
	// maxResponseBody is how much of a response body an attempt reads before it stops.
	maxResponseBody = 64 << 10
	// maxRetryAfter bounds how far a Retry-After header can push a retry beyond its scheduled delay.
	maxRetryAfter = time.Hour
	// retryJitter spreads each scheduled delay by ±20%.
	retryJitter = 0.2
	userAgent   = "smartdrop-webhooks/1"
)

// DefaultRetrySchedule returns the default delays after each failed attempt: 5s, 5m, 30m, 2h, 5h, 10h,
// 10h (about 27.6 hours in all, eight attempts), each spread by ±20%.
func DefaultRetrySchedule() []time.Duration {
	return []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
}

// Options configure a Dispatcher. The zero value of every field means its default.
type Options struct {
	// KeyPrefix starts every Redis key; default "webhooks". It must not contain '{' or '}'.
	KeyPrefix string
	// Retention is the life of a delivery record and of its claim: a pair dispatched again within it is
	// a duplicate. Default 7 days; it must cover the whole retry schedule.
	Retention time.Duration
	// RetrySchedule are the delays after each failed attempt; default DefaultRetrySchedule().
	RetrySchedule []time.Duration
	// Timeout bounds one HTTP attempt; default 15s, at most 5 minutes. Leases derive from it.
	Timeout time.Duration
	// HTTPClient is used for attempts when set; its transport gets the egress guard (it must then be
	// an *http.Transport), and redirects are never followed.
	HTTPClient *http.Client
	// AllowPrivateNetworks turns the egress guard off: tests and local demos only.
	AllowPrivateNetworks bool
	// AllowedNetworks are ranges the egress guard lets through although they are private.
	AllowedNetworks []netip.Prefix
	// RequireHTTPS refuses webhook URLs that are not https.
	RequireHTTPS bool
	// MaxPayloadBytes bounds an encoded request body; default 256 KiB.
	MaxPayloadBytes int
	// Concurrency bounds the attempts one worker pass makes at once; default 64.
	Concurrency int
	// Logger receives the library's logs; default none. Secrets and bodies are never logged.
	Logger *slog.Logger
	// Hooks are callbacks on delivery outcomes.
	Hooks Hooks
	// DisableAfter disables a webhook whose attempts have failed for this long with no success in
	// between: when an attempt fails, its webhook's failures started at least DisableAfter ago and no
	// delivery to it succeeded within DisableAfter, it is disabled. Runs of failures are tracked per
	// event shard, so after a success the clock restarts at the first failure seen in each shard: the
	// webhook may be disabled later than DisableAfter, never earlier. Default DefaultDisableAfter (5
	// days); negative never.
	DisableAfter time.Duration
}

// Result is the outcome of a Dispatch for one subscribed webhook.
type Result struct {
	WebhookID string
	// Delivery is the pair's delivery: after this call's first attempt when it created it, or the
	// existing record when Duplicate is set.
	Delivery *Delivery
	// Duplicate is set when the pair had been dispatched before: nothing was sent.
	Duplicate bool
	// Err is this target's own failure (Redis unavailable, outcome not recorded, context ended); an HTTP
	// failure is not an error here but a pending Delivery with LastError.
	Err error
}

// Dispatcher delivers events to the webhooks that subscribe to them. It is safe for concurrent use, and
// any number of Dispatchers (in one process or many) may share one Redis.
type Dispatcher struct {
	rdb        redis.UniversalClient
	opts       Options
	keys       keyspace
	client     *http.Client
	lease      time.Duration
	log        *slog.Logger
	webhooks   *WebhookRepo
	deliveries *DeliveryRepo
	now        func() time.Time
	scripts    *laneBatcher
	nextShard  uint32 // where the next worker pass starts; guarded by shardMu
	shardMu    sync.Mutex
}

// leaseFor is how long an attempt holds its delivery: the attempt's timeout, plus as much again (at
// least a second) for recording its outcome and for clock differences between replicas.
func leaseFor(timeout time.Duration) time.Duration {
	return timeout + max(timeout, time.Second)
}

// retryHorizon is the longest a delivery can stay pending: every delay at its jittered maximum, raised
// by Retry-After, plus a lease per attempt.
func retryHorizon(schedule []time.Duration, lease time.Duration) time.Duration {
	var h time.Duration
	for _, d := range schedule {
		h += time.Duration(float64(d)*(1+retryJitter)) + maxRetryAfter + lease
	}
	return h + lease
}

// New returns a Dispatcher on rdb (a *redis.Client, *redis.ClusterClient or failover client).
func New(rdb redis.UniversalClient, opts Options) (*Dispatcher, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalidOptions)
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = DefaultKeyPrefix
	}
	if strings.ContainsAny(opts.KeyPrefix, "{}") {
		return nil, fmt.Errorf("%w: KeyPrefix must not contain '{' or '}'", ErrInvalidOptions)
	}
	if opts.Retention == 0 {
		opts.Retention = DefaultRetention
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Timeout < 0 || opts.Timeout > maxTimeout {
		return nil, fmt.Errorf("%w: Timeout must be in (0, %s]", ErrInvalidOptions, maxTimeout)
	}
	if opts.RetrySchedule == nil {
		opts.RetrySchedule = DefaultRetrySchedule()
	}
	for _, d := range opts.RetrySchedule {
		if d <= 0 {
			return nil, fmt.Errorf("%w: RetrySchedule delays must be positive", ErrInvalidOptions)
		}
	}
	lease := leaseFor(opts.Timeout)
	if h := retryHorizon(opts.RetrySchedule, lease); opts.Retention < h {
		return nil, fmt.Errorf("%w: Retention %s is shorter than the retry horizon %s", ErrInvalidOptions, opts.Retention, h)
	}
	if opts.MaxPayloadBytes == 0 {
		opts.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if opts.MaxPayloadBytes < 0 {
		return nil, fmt.Errorf("%w: MaxPayloadBytes must be positive", ErrInvalidOptions)
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Concurrency < 0 {
		return nil, fmt.Errorf("%w: Concurrency must be positive", ErrInvalidOptions)
	}
	if opts.DisableAfter == 0 {
		opts.DisableAfter = DefaultDisableAfter
	}
	for _, p := range opts.AllowedNetworks {
		if !p.IsValid() {
			return nil, fmt.Errorf("%w: AllowedNetworks has an invalid prefix", ErrInvalidOptions)
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	policy := egressPolicy{allowPrivate: opts.AllowPrivateNetworks, allowed: opts.AllowedNetworks}
	client, err := newHTTPClient(opts.HTTPClient, opts.Timeout, policy)
	if err != nil {
		return nil, err
	}
	keys := newKeyspace(opts.KeyPrefix)
	d := &Dispatcher{rdb: rdb, opts: opts, keys: keys, client: client, lease: lease, log: opts.Logger, now: time.Now,
		scripts: newLaneBatcher(rdb)}
	d.webhooks = &WebhookRepo{rdb: rdb, keys: keys, now: func() time.Time { return d.now() }, policy: policy,
		https: opts.RequireHTTPS, cache: map[string]subscriberEntry{}}
	d.deliveries = &DeliveryRepo{rdb: rdb, keys: keys}
	return d, nil
}

// CloseIdleConnections closes the idle keep-alive connections of the attempts' HTTP client, for a
// clean shutdown (a Dispatcher holds no other resource; the Redis client is the caller's).
func (d *Dispatcher) CloseIdleConnections() { d.client.CloseIdleConnections() }

// Webhooks returns the webhook registry.
func (d *Dispatcher) Webhooks() *WebhookRepo { return d.webhooks }

// Deliveries returns the delivery records.
func (d *Dispatcher) Deliveries() *DeliveryRepo { return d.deliveries }

// wireEvent is the request body.
type wireEvent struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

func (d *Dispatcher) encode(evt Event) ([]byte, error) {
	at := evt.Time
	if at.IsZero() {
		at = d.now()
	}
	body, err := json.Marshal(wireEvent{ID: evt.ID, Type: evt.Type, Timestamp: at.UTC(), Data: evt.Data})
	if err != nil {
		return nil, fmt.Errorf("%w: encode data: %w", ErrInvalidEvent, err)
	}
	if len(body) > d.opts.MaxPayloadBytes {
		return nil, fmt.Errorf("%w: encoded body is %d bytes, more than %d", ErrInvalidEvent, len(body), d.opts.MaxPayloadBytes)
	}
	return body, nil
}

// Dispatch delivers evt to every enabled webhook that subscribes to its type, once per (webhook, event
// id) pair. For each pair it creates, it makes the first attempt before it returns, concurrently across
// targets and each bounded by Options.Timeout; a pair dispatched before is returned as it stands with
// Duplicate set, and nothing is sent, whatever its status. A failed attempt leaves the delivery pending
// with its next attempt scheduled for the worker (Run).
//
// Dispatch returns an error only for an invalid event (ErrInvalidEvent) or when the subscribers cannot
// be resolved; each target's own failure is in its Result.
func (d *Dispatcher) Dispatch(ctx context.Context, evt Event) ([]Result, error) {
	if err := evt.validate(); err != nil {
		return nil, err
	}
	body, err := d.encode(evt)
	if err != nil {
		return nil, err
	}
	targets, err := d.webhooks.subscribers(ctx, evt.Type)
	if err != nil {
		return nil, err
	}
	return d.deliver(ctx, evt.ID, evt.Type, body, targets), nil
}

// SendTest sends a `webhook.test` event with a fresh id (`test_` + random) to one webhook, whatever its
// subscriptions and even when it is disabled. It is never a duplicate of anything.
func (d *Dispatcher) SendTest(ctx context.Context, webhookID string) (*Delivery, error) {
	s, _, err := d.webhooks.load(ctx, webhookID)
	if err != nil {
		return nil, err
	}
	evt := Event{Type: TestEventType, ID: "test_" + randomHex(12), Data: map[string]string{"webhook_id": webhookID}}
	body, err := d.encode(evt)
	if err != nil {
		return nil, err
	}
	res := d.deliver(ctx, evt.ID, evt.Type, body, []*storedWebhook{s})[0]
	return res.Delivery, res.Err
}

// deliver claims the pairs of one event and makes the first attempt of every fresh one.
func (d *Dispatcher) deliver(ctx context.Context, eventID, eventType string, body []byte, targets []*storedWebhook) []Result {
	results := make([]Result, len(targets))
	if len(targets) == 0 {
		return results
	}
	shard := shardOf(eventID)
	now := d.now()
	keys := make([]string, 2, 2+2*len(targets))
	keys[0], keys[1] = d.keys.eventKey(shard, eventID), d.keys.scheduleKey(shard)
	args := make([]any, 4, 4+3*len(targets))
	args[0], args[1], args[2], args[3] = now.UnixMilli(), d.opts.Retention.Milliseconds(), now.Add(d.lease).UnixMilli(), body
	recs := make([]*record, len(targets))
	for i, t := range targets {
		id := deliveryIDFor(t.ID, eventID)
		recs[i] = &record{Delivery: Delivery{ID: id, WebhookID: t.ID, EventID: eventID, EventType: eventType,
			Status: StatusPending, NextAttemptAt: msTime(now.Add(d.lease).UnixMilli()), CreatedAt: msTime(now.UnixMilli()),
			UpdatedAt: msTime(now.UnixMilli()), ExpiresAt: msTime(now.UnixMilli() + d.opts.Retention.Milliseconds())}}
		recs[i].holdLease(randomHex(tokenLen/2), now.Add(d.lease))
		keys = append(keys, d.keys.deliveryKey(shard, id), d.keys.indexKey(shard, t.ID))
		args = append(args, id, indexedHash(id), recs[i].encode())
		results[i].WebhookID = t.ID
	}
	reply, err := d.scripts.run(ctx, claimScript, keys, args...).Slice()
	if err != nil && isTransient(err) && ctx.Err() == nil {
		// The reply may be lost after the script ran: running it again with the same tokens is safe,
		// and reports the pairs this call created as created.
		reply, err = d.scripts.run(ctx, claimScript, keys, args...).Slice()
	}
	if err == nil && len(reply) != 1+len(targets) {
		err = fmt.Errorf("unexpected reply of %d items", len(reply))
	}
	if err != nil {
		for i := range results {
			results[i].Err = fmt.Errorf("webhooks: claim event %s: %w", eventID, err)
		}
		return results
	}
	if stored, ok := reply[0].(string); ok {
		body = []byte(stored) // the event was stored by an earlier Dispatch: deliver what it stored
	}
	var fresh []int
	for i := range targets {
		switch item := reply[1+i].(type) {
		case int64:
			results[i].Delivery = &recs[i].Delivery // settle applies the outcome to it
			fresh = append(fresh, i)
		case string:
			results[i].Duplicate = true
			rec, err := parseRecord(recs[i].ID, item)
			if err != nil {
				results[i].Err = err
				continue
			}
			results[i].Delivery = &rec.Delivery
		default:
			results[i].Err = fmt.Errorf("webhooks: claim event %s: unexpected reply %v", eventID, reply[1+i])
		}
	}
	if len(fresh) == 0 {
		return results
	}
	outcomes := make([]outcome, len(fresh))
	leased := make([]*record, len(fresh))
	var wg sync.WaitGroup
	for j, i := range fresh {
		leased[j] = recs[i]
		wg.Go(func() {
			outcomes[j] = d.decide(recs[i], d.attempt(ctx, targets[i], recs[i], body))
		})
	}
	wg.Wait()
	for j, err := range d.settle(ctx, shard, leased, outcomes) {
		if err != nil {
			results[fresh[j]].Err = err
		}
	}
	return results
}

// isTransient reports whether a Redis call failed in transport (a timeout, a dropped connection), so
// that it may or may not have run.
func isTransient(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, syscall.ECONNRESET)
}

// attemptResult is what one HTTP attempt saw.
type attemptResult struct {
	at         time.Time
	dur        time.Duration
	code       int
	err        string
	body       string
	retryAfter time.Duration
	canceled   bool // not attempted in time, or the caller's context ended: not an outcome to record
}

// responseHeads holds the buffers that keep the start of a response body.
var responseHeads = sync.Pool{New: func() any { return new([maxHistoryBody]byte) }}

// attempt sends one signed request for a leased delivery. It is made only if a whole attempt
// (Options.Timeout) still ends with a margin before the lease does, so a worker that takes the
// delivery over after the lease can never overlap it.
func (d *Dispatcher) attempt(ctx context.Context, wh *storedWebhook, rec *record, body []byte) attemptResult {
	start := d.now()
	res := attemptResult{at: start}
	if rec.leaseEnd.Sub(start)-(d.lease-d.opts.Timeout)/2 < d.opts.Timeout {
		// A whole attempt no longer fits in the lease (the claim's reply, or the pass before it, was
		// slow): leave it to a worker after the lease rather than cut it short.
		res.err, res.canceled = "too little of the lease was left to attempt it", true
		return res
	}
	secrets, err := wh.secrets(start)
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
	req.Header = http.Header{"Content-Type": {"application/json"}, "User-Agent": {userAgent}}
	setSignedHeaders(req.Header, rec.ID, start, body, secrets...)
	resp, err := d.client.Do(req)
	res.dur = d.now().Sub(start)
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
		return time.Duration(min(s, int(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxRetryAfter)
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
	disable    bool // 410 Gone: disable the webhook
	unrecorded bool // the caller's context ended mid-attempt: leave it to the lease
}

// decide turns an attempt into the record's next state, by the retry schedule.
func (d *Dispatcher) decide(rec *record, res attemptResult) outcome {
	o := outcome{id: rec.ID, token: rec.heldToken(), code: res.code, err: res.err, attempted: true, step: rec.step,
		unrecorded: res.canceled,
		attempt: Attempt{At: msTime(res.at.UnixMilli()), Duration: res.dur.Truncate(time.Microsecond), StatusCode: res.code,
			Error: res.err, Response: res.body}}
	switch {
	case res.code >= 200 && res.code < 300 && res.err == "":
		o.status = StatusSuccess
	case res.code == http.StatusGone:
		o.status, o.disable = StatusFailed, true
		o.err = "HTTP 410 Gone: the webhook was disabled"
	case rec.step < len(d.opts.RetrySchedule):
		delay := jitter(d.opts.RetrySchedule[rec.step])
		if res.retryAfter > delay {
			delay = min(res.retryAfter, maxRetryAfter)
		}
		o.status, o.next, o.step = StatusPending, d.now().Add(delay), rec.step+1
	default:
		o.status = StatusFailed
	}
	return o
}

// refuse is the outcome of a due delivery that is not attempted: it fails for the given reason.
func refuse(rec *record, reason string) outcome {
	return outcome{id: rec.ID, token: rec.heldToken(), status: StatusFailed, step: rec.step, code: rec.LastStatusCode,
		err: reason}
}

func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 - retryJitter + 2*retryJitter*rand.Float64()))
}

// outcomeScript records the outcomes of attempts on deliveries of one shard, each only if the delivery
// is still leased by the token its attempt was made under, so a worker whose lease expired cannot
// overwrite a newer attempt's outcome. The new record is computed in Go from the record the lease was
// taken on (nothing else writes a record while it is leased), and marks the lease settled, so that the
// same call run again (a client retrying a request whose reply was lost) reports it recorded instead
// of lost, and writes nothing twice. It also keeps the shard's view of each webhook's health: the time
// of its last success, and the start of its current run of failures. Every lease is checked before
// the first write.
//
// KEYS[1] -> {P:s}:due
// KEYS[2] -> {P:s}:health
// KEYS[2+i] (i = 1..n) -> delivery key of outcome i
// ARGV[1] -> now (ms)
// ARGV[2] -> retention (ms): the health hash lives at least that long after its last write (up to 1/64
// more, so most writes leave its TTL as it is)
// ARGV[3+6(i-1)] .. ARGV[8+6(i-1)] -> outcome i: delivery id, lease token, status, next attempt (ms,
// pending only), webhook id, 1 if an attempt was made (else 0); ARGV[2+6n+i] -> outcome i's new record
// returns per outcome two integers: 1 when recorded (now or by an earlier run of the same call; 0 when
// its lease was lost and nothing was written), and the start (ms) of the webhook's run of failures in
// this shard (0 if none)
var outcomeScript = redis.NewScript(`
local n, retention = #KEYS - 2, tonumber(ARGV[2])
local held = {}
for i = 1, n do
  local head, token = redis.call('GETRANGE', KEYS[2 + i], 0, ` + strconv.Itoa(tokenLen) + `), ARGV[4 + 6 * (i - 1)]
  if head == token .. 'L' then held[i] = 'yes' elseif head == token .. '+' then held[i] = 'done' else held[i] = 'no' end
end
local reply, healthWritten = {}, false
for i = 1, n do
  reply[2 * i - 1], reply[2 * i] = 0, 0
  if held[i] == 'done' then reply[2 * i - 1] = 1 end
  if held[i] == 'yes' then
    local a = 2 + 6 * (i - 1)
    local id, status, next, wid = ARGV[a + 1], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
    if ARGV[a + 6] == '1' then
      if status == 'success' then
        redis.call('HSET', KEYS[2], wid .. ':ok', ARGV[1])
        redis.call('HDEL', KEYS[2], wid .. ':fail')
      else
        redis.call('HSETNX', KEYS[2], wid .. ':fail', ARGV[1])
        reply[2 * i] = tonumber(redis.call('HGET', KEYS[2], wid .. ':fail'))
      end
      healthWritten = true
    end
    redis.call('SET', KEYS[2 + i], ARGV[2 + 6 * n + i], 'KEEPTTL')
    if status == 'pending' then
      redis.call('ZADD', KEYS[1], next, id)
    else
      redis.call('ZREM', KEYS[1], id)
    end
    reply[2 * i - 1] = 1
  end
end
if healthWritten and redis.call('PTTL', KEYS[2]) < retention then
  redis.call('PEXPIRE', KEYS[2], retention + math.floor(retention / 64))
end
return reply
`)

// ErrDeferred is the Result.Err (wrapped) of a delivery whose attempt was not made or not recorded
// by this call (its context ended, or its claim's reply came too late to attempt within the lease):
// the delivery is scheduled, and a worker attempts it once the lease expires.
var ErrDeferred = errors.New("webhooks: attempt deferred to the worker")

// ErrLeaseLost is the error (wrapped) of an outcome that could not be recorded because another attempt took over the
// delivery after this one's lease expired.
var ErrLeaseLost = errors.New("webhooks: lease lost: a newer attempt owns the delivery")

// settle records the outcomes of attempts on deliveries of one shard in one round trip, applies each
// recorded outcome to its in-memory record and runs the hooks. It returns one error per outcome, nil
// when recorded. An outcome whose attempt the caller abandoned is left to its lease.
func (d *Dispatcher) settle(ctx context.Context, shard int, recs []*record, outcomes []outcome) []error {
	errs := make([]error, len(outcomes))
	keys := []string{d.keys.scheduleKey(shard), d.keys.healthKey(shard)}
	now := d.now()
	args := []any{now.UnixMilli(), d.opts.Retention.Milliseconds()}
	values := make([]any, 0, len(outcomes))
	idx := make([]int, 0, len(outcomes))
	for i, o := range outcomes {
		if o.unrecorded {
			errs[i] = fmt.Errorf("webhooks: delivery %s: %s; a worker attempts it after its lease: %w", o.id, o.err, ErrDeferred)
			continue
		}
		next := *recs[i] // the record as the outcome leaves it; applied in memory once recorded
		next.History = slices.Clip(next.History)
		next.apply(o, now)
		attempted := 0
		if o.attempted {
			attempted = 1
		}
		keys = append(keys, d.keys.deliveryKey(shard, o.id))
		args = append(args, o.id, o.token, string(o.status), unixMilli(o.next), recs[i].WebhookID, attempted)
		values = append(values, next.encode())
		idx = append(idx, i)
	}
	if len(idx) == 0 {
		return errs
	}
	// The attempt is over whatever the caller's context says now: record it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.lease)
	defer cancel()
	reply, err := d.scripts.run(ctx, outcomeScript, keys, append(args, values...)...).Int64Slice()
	if err == nil && len(reply) != 2*len(idx) {
		err = fmt.Errorf("unexpected reply of %d items", len(reply))
	}
	for j, i := range idx {
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("webhooks: record outcome of %s: %w", outcomes[i].id, err)
		case reply[2*j] != 1:
			errs[i] = fmt.Errorf("webhooks: record outcome of %s: %w", outcomes[i].id, ErrLeaseLost)
		default:
			recs[i].apply(outcomes[i], now)
			d.afterOutcome(ctx, recs[i], outcomes[i], msTime(reply[2*j+1]))
		}
	}
	return errs
}
