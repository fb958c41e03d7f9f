package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/smartdrop/webhooks/internal/admin"
	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/endpoint"
	"github.com/smartdrop/webhooks/internal/events"
	"github.com/smartdrop/webhooks/internal/eventtypes"
	"github.com/smartdrop/webhooks/internal/ratelimit"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/replay"
	"github.com/smartdrop/webhooks/internal/trace"
	"github.com/smartdrop/webhooks/internal/types"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/egress"
	"github.com/smartdrop/webhooks/internal/filter"
	"github.com/smartdrop/webhooks/internal/httpdest"
	"github.com/smartdrop/webhooks/internal/notify"
	"github.com/smartdrop/webhooks/internal/sealed"
	"github.com/smartdrop/webhooks/internal/signing"
	"github.com/smartdrop/webhooks/internal/worker"
)

// Dispatcher delivers events to the webhooks that subscribe to them. It is safe for concurrent use, and
// any number of Dispatchers (in one process or many) may share one Redis.
type Dispatcher struct {
	rdb           redis.UniversalClient
	opts          Options
	keys          rdb.Keys
	dests         destinations     // by URL scheme: the built-in HTTP one and Options.Destinations
	dial          egress.DialFunc  // the egress guard's dialer, every Message's Dial
	parsedSecrets signing.KeyCache // the webhooks' secrets as keys (signingKeys)
	transforms    *transforms      // Webhook.Transform's programs (transforms.go)
	lease         time.Duration
	log           *slog.Logger
	trace         trace.Tracing  // the Options.Tracer's spans and traceparents (internal/trace)
	send          trace.SendFunc // an HTTP attempt (attempt), within its trace span
	webhooks      *WebhookRepo
	deliveries    *DeliveryRepo
	eventTypes    *EventTypeRepo
	now           func() time.Time
	scripts       *rdb.LaneBatcher
	counts        *rdb.ScriptBatcher // the circuit counts sent on their own (countNow): one lane, so they merge
	flights       *worker.InFlight
	breaker       *breaker.Breaker
	indexTTLs     *indexTTLs
	known         *knownEvents           // the events claimed lately, whose calls again first look for duplicates (duplicates.go)
	bodies        *worker.Bodies         // of events this Dispatcher left to its worker lately (internal/worker)
	wake          *worker.Wake           // pokes a sleeping worker: Enqueue, an ending attempt
	leaser        *worker.Leaser         // the worker's lease passes (internal/worker)
	attempter     *worker.Attempter      // the worker's attempts, and their MaxConcurrency slots (internal/worker)
	redisDown     *worker.RedisLog       // the worker's warnings while Redis fails it
	pending       worker.PendingOutcomes // outcomes Redis could not take, for Run to write (pending_outcomes.go)
	admin         *admin.Backend         // the admin API's backend, and Stats, RetryNow, ProbeNow (internal/admin)
	notify        *notify.Notifier       // hooks, logs, operational events, auto-disable (internal/notify)
	events        *events.Encoder        // the checks and request body of an event (internal/events)
	replayer      *replay.Replayer       // ReplayMissing (internal/replay)
	resend        *replay.Redeliverer    // Redeliver (internal/replay)
}

// New returns a Dispatcher on rdb (a *redis.Client, *redis.ClusterClient or failover client). It does
// no I/O: it fails only for invalid options, never for Redis's sake, and logs nothing. The key
// prefix's shard count is read from Redis (stored as Options.Shards on first use; see Options.Shards)
// by the first call that needs it, with that call's context, so a Dispatcher made while Redis is down
// or loading works once Redis answers (TestNewDoesNoIO).
func New(rdb redis.UniversalClient, opts Options) (*Dispatcher, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalidOptions)
	}
	down := worker.NewRedisLog(opts.Logger) // nil: slog.Default()
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	lease := leaseFor(opts.Timeout)
	policy := egress.Policy{AllowPrivate: opts.AllowPrivateNetworks, Allowed: opts.AllowedNetworks}
	client, err := endpoint.NewClient(opts.HTTPClient, opts.Timeout, policy)
	if err != nil {
		return nil, err
	}
	keys := newKeys(opts)
	d := &Dispatcher{rdb: rdb, opts: opts, keys: keys, dial: policy.Dialer(opts.Timeout), lease: lease, log: opts.Logger, now: time.Now,
		transforms: &transforms{maxCost: uint64(opts.MaxTransformCost)},
		indexTTLs:  newIndexTTLs(opts.Retention), known: newKnownEvents(opts.ReplicaAcks == 0), bodies: worker.NewBodies(),
		wake: worker.NewWake(), redisDown: down, trace: trace.Tracing{Tracer: opts.Tracer}}
	d.send = d.trace.Attempts(d.attempt)
	d.scripts, d.counts = newBatchers(rdb)
	d.breaker = newBreaker(rdb, d)
	// The in-flight limit runs on the wall clock: waiting for a slot is real time, whatever d.now says.
	d.flights = worker.NewInFlight(inFlightFloor(opts.Concurrency), opts.Timeout, time.Now)
	ring, _ := sealed.NewRing(opts.SecretKeys) // checked by withDefaults
	if d.dests, err = newDestinations(newHTTPDestination(d, rdb, ring, client), opts.Destinations); err != nil {
		return nil, err
	}
	d.webhooks = &WebhookRepo{rdb: rdb, keys: keys, now: func() time.Time { return d.now() }, policy: policy, ring: ring, dests: d.dests,
		transforms: d.transforms,
		https:      opts.RequireHTTPS, cache: map[string]subscriberEntry{}, circuits: d.breaker,
		quota: opts.MaxWebhooksPerTenant}
	d.deliveries = &DeliveryRepo{rdb: rdb, keys: keys, webhooks: d.webhooks}
	d.notify = &notify.Notifier{Hooks: opts.Hooks, Log: opts.Logger, Now: func() time.Time { return d.now() },
		OperationalEvents: opts.OperationalEvents, DisableAfter: opts.DisableAfter, Webhooks: webhookStore{d.webhooks},
		Enqueue: d.enqueueOperational, Client: rdb, Keys: keys}
	d.eventTypes = &EventTypeRepo{rdb: rdb, keys: keys, cache: eventtypes.New(rdb, keys, eventTypeCacheTTL, func() time.Time { return d.now() })}
	wireUnits(d)
	return d, nil
}

// newHTTPDestination is d's built-in HTTP destination, sending with client (the guarded one) and
// keeping the OAuth2 tokens of endpoint authentication in rdb.
func newHTTPDestination(d *Dispatcher, rdb redis.UniversalClient, ring *sealed.Ring, client *http.Client) *httpdest.Destination {
	auth := endpoint.NewAuthenticator(endpoint.Config{Redis: rdb, Keys: d.keys, Ring: ring, Client: client,
		Timeout: d.opts.Timeout, Now: func() time.Time { return d.now() }, UserAgent: userAgent})
	return httpdest.New(httpdest.Config{Client: client, Auth: auth, RequireHTTPS: d.opts.RequireHTTPS, UserAgent: userAgent})
}

// inFlightFloor is the floor of each webhook's in-flight limit in a Dispatcher of concurrency
// Concurrency (worker.InFlight: the limit starts there, grows up to worker.FastInFlightFactor times it
// for a webhook that answers fast, and comes back to it when the webhook stalls): a quarter of
// Concurrency, at least one. The engine's own protection, not a maximum (Options.Concurrency says it
// to users; a hard bound is Webhook.MaxConcurrency).
func inFlightFloor(concurrency int) int { return max(1, concurrency/4) }

// wireUnits builds the units that take d's dependencies at construction (the lease pass, the attempts,
// the event encoder, replay, redeliver, the admin backend), in the order they depend on each other. A
// test that swaps one of d's dependencies (its Redis client, its in-flight slots) calls it again.
func wireUnits(d *Dispatcher) {
	d.leaser = newLeaser(d)
	d.attempter = newAttempter(d)
	d.events, d.replayer, d.resend = newEncoder(d), newReplayer(d), newRedeliverer(d)
	d.admin = newAdmin(d)
}

// CloseIdleConnections closes the idle keep-alive connections of the attempts' HTTP client, for a
// clean shutdown (a Dispatcher holds no other resource of its own: the Redis client and
// Options.Destinations are the caller's to close).
func (d *Dispatcher) CloseIdleConnections() { d.dests.http.CloseIdleConnections() }

// Webhooks returns the webhook registry.
func (d *Dispatcher) Webhooks() *WebhookRepo { return d.webhooks }

// Deliveries returns the delivery records.
func (d *Dispatcher) Deliveries() *DeliveryRepo { return d.deliveries }

// Dispatch delivers evt to every enabled webhook that subscribes to its type, once per (webhook, event
// id) pair. For each pair it creates, it makes the first attempt before it returns, concurrently across
// targets, each bounded by Options.Timeout and recorded as soon as it ends; a pair dispatched before is
// returned as it stands with Duplicate set, and nothing is sent, whatever its status. A failed attempt
// leaves the delivery pending with its next attempt scheduled for the worker (Run).
//
// A nil error means the event is accepted: every target's pair is durably recorded (sent, scheduled
// or a duplicate), and every Result has a Delivery. The error wraps ErrInvalidEvent for an event that
// fails validation (nothing is claimed), and ErrNotAccepted when at least one target could not be
// claimed (Redis failed, the context ended): dispatch the event again, which is safe, since the
// accepted targets come back as duplicates. With ErrNotAccepted the Results are returned too, each
// saying whether its target was accepted (Result.Accepted). An error resolving the subscribers wraps
// ErrNotAccepted as well, with no Results.
func (d *Dispatcher) Dispatch(ctx context.Context, evt Event) ([]Result, error) {
	return d.accept(ctx, "Dispatch", evt, true)
}

// accept is Dispatch (inline) and Enqueue: it validates and encodes the event, resolves its targets
// and claims them, within the Tracer's call span.
func (d *Dispatcher) accept(ctx context.Context, op string, evt Event, inline bool) (rs []Result, err error) {
	ctx, end := d.trace.StartCall(ctx, op, evt)
	defer func() { end(rs, err) }()
	body, err := d.events.Check(ctx, evt, true)
	if err != nil {
		return nil, err
	}
	if err := loadKeys(ctx, d.keys, d.rdb); err != nil {
		return nil, fmt.Errorf("%w: event %s: %w", ErrNotAccepted, evt.ID, err)
	}
	targets, err := d.targets(ctx, evt, body)
	if err != nil {
		return nil, err
	}
	if len(targets) == 0 && d.opts.ReplayIndex && evt.OrderKey == "" {
		return nil, d.storeForReplay(ctx, evt, body) // for a webhook that replays it later
	}
	results := d.claimAndAttempt(ctx, evt.Tenant, evt.ID, evt.Type, evt.OrderKey, body, targets, inline)
	for _, r := range results {
		if errors.Is(r.Err, ErrEventConflict) {
			return nil, r.Err // nothing claimed: the id names another event
		}
	}
	return results, notAccepted(evt.ID, results)
}

// notAccepted is the error of a call whose results include targets that were not claimed: it wraps
// ErrNotAccepted and each such target's cause; nil when every target was accepted.
func notAccepted(eventID string, results []Result) error {
	var causes []error
	for _, r := range results {
		if r.Delivery == nil {
			causes = append(causes, fmt.Errorf("webhook %s: %w", r.WebhookID, r.Err))
		}
	}
	if len(causes) == 0 {
		return nil
	}
	return fmt.Errorf("%w: event %s: %d of %d targets: %w", ErrNotAccepted, eventID, len(causes), len(results),
		errors.Join(causes...))
}

// Enqueue is Dispatch without the inline attempt: the producer's fast path. It claims every
// subscribed webhook's pair in one round trip (once subscribers are cached), makes every fresh
// delivery due at once, and returns; a worker (Run) in this process starts the attempts at once, and
// the claim wakes other replicas' workers (Run): at once when this process runs none, else a second
// later (worker.WakeGrace), for what its own worker has not taken by then. A
// webhook whose circuit this Dispatcher has seen open gets its delivery parked until
// the circuit's probe. Its results and errors follow Dispatch's contract: a nil error means every pair
// is durably recorded and every Result has a Delivery (pending, or the existing one of a duplicate).
func (d *Dispatcher) Enqueue(ctx context.Context, evt Event) ([]Result, error) {
	return d.accept(ctx, "Enqueue", evt, false)
}

// SendTest sends a `webhook.test` event with a fresh id (`test_` + random) to one webhook, whatever its
// subscriptions and even when it is disabled. It is never a duplicate of anything. Test sends are
// bounded: at most TestSendsPerWebhook per second to a webhook and TestSendsPerTenant per second to a
// tenant's webhooks (more wraps ErrTestSendsLimited, saying when to try again; nothing is claimed for
// it, nor a slot of either limit spent), and their records are kept TestSendRetention (or
// Options.Retention when shorter), not Options.Retention. Its error follows Dispatch's contract:
// ErrNotAccepted when the test delivery could not be claimed, ErrDeferred (with the Delivery) when its
// attempt was left to the worker.
func (d *Dispatcher) SendTest(ctx context.Context, webhookID string) (*Delivery, error) {
	s, _, err := d.webhooks.load(ctx, webhookID)
	if err != nil {
		return nil, err
	}
	if err := ratelimit.TakeTestSend(ctx, d.rdb, d.keys, s.ID, s.Tenant); err != nil {
		return nil, err
	}
	evt := Event{Type: TestEventType, ID: types.TestEventIDPrefix + randomHex(12), Data: map[string]string{"webhook_id": webhookID}}
	body, err := d.events.Encode(evt)
	if err != nil {
		return nil, err
	}
	if err := loadKeys(ctx, d.keys, d.rdb); err != nil {
		return nil, fmt.Errorf("%w: event %s: %w", ErrNotAccepted, evt.ID, err)
	}
	retention := min(d.opts.Retention, TestSendRetention)
	results := d.claimAndAttemptFor(ctx, retention, s.Tenant, evt.ID, evt.Type, "", body, []*storedWebhook{s}, true)
	if err := notAccepted(evt.ID, results); err != nil {
		return nil, err
	}
	return results[0].Delivery, results[0].Err
}

// targets resolves an event's subscribers among its tenant's webhooks and keeps those whose filter
// selects it: a webhook filtered out claims nothing. An error wraps ErrNotAccepted.
func (d *Dispatcher) targets(ctx context.Context, evt Event, body []byte) ([]*storedWebhook, error) {
	all, err := d.webhooks.subscribers(ctx, evt.Tenant, evt.Type)
	if err != nil {
		rdb.ReloadOnTransport(d.rdb, err)
		return nil, fmt.Errorf("%w: event %s: %w", ErrNotAccepted, evt.ID, err)
	}
	var doc *filter.Document // one for all the webhooks: it decodes the data once, if a filter reads it
	out := make([]*storedWebhook, 0, len(all))
	for _, t := range all {
		if len(t.Filter) > 0 && doc == nil {
			var w struct {
				Data json.RawMessage `json:"data"`
			}
			_ = json.Unmarshal(body, &w) // the body was just encoded from the event
			doc = filter.NewDocument(evt.Type, w.Data)
		}
		if filterMatches(t, doc) {
			out = append(out, t)
		}
	}
	return out, nil
}

// claimAndAttempt claims the pairs of one event, as planned per target, and, when inline, makes the
// first attempt of every fresh pair planned for one, recording each outcome as its attempt ends. An
// ordered event's pairs (orderKey set) are claimed in its key's shard (ordered.go), and a pair
// created behind its key's head is not attempted.
func (d *Dispatcher) claimAndAttempt(ctx context.Context, tenant, eventID, eventType, orderKey string, body []byte, targets []*storedWebhook, inline bool) []Result {
	return d.claimAndAttemptFor(ctx, d.opts.Retention, tenant, eventID, eventType, orderKey, body, targets, inline)
}

// claimAndAttemptFor is claimAndAttempt of records kept retention (a test send's are kept less long).
func (d *Dispatcher) claimAndAttemptFor(ctx context.Context, retention time.Duration, tenant, eventID, eventType, orderKey string, body []byte,
	targets []*storedWebhook, inline bool) []Result {
	results := make([]Result, len(targets))
	if len(targets) == 0 {
		return results
	}
	scoped := rdb.ScopedEventID(tenant, eventID)
	shard := d.keys.EventShard(tenant, scoped, orderKey)
	if orderKey == "" {
		if dups, ok := d.answerDuplicates(ctx, shard, scoped, eventID, eventType, body, targets); ok {
			return dups
		}
	}
	plans := d.plan(ctx, targets, inline)
	recs := d.newRecords(retention, scoped, eventID, eventType, targets, plans)
	d.trace.Stamp(ctx, recs)
	reply, bodyKey, err := d.claimEvent(ctx, shard, scoped, orderKey, eventType, body, recs, plans)
	if err != nil {
		for i, t := range targets {
			plans[i].cancel(d, t.ID)
			results[i] = Result{WebhookID: t.ID, Err: err}
		}
		return results
	}
	if orderKey == "" && retention == d.opts.Retention { // what answerDuplicates may read: no ordered event, no test send
		d.known.add(scoped)
	}
	if stored, ok := reply[0].(string); ok {
		body = rdb.EventBody(stored) // the event was stored by an earlier Dispatch: deliver what it stored
	}
	queued := false
	var attempts []int
	for i, t := range targets {
		results[i].WebhookID = t.ID
		item, fresh := reply[1+i].(int64)
		plans[i].queuedBehind(item)
		if !fresh || item == rdb.ClaimWaiting || !plans[i].inline {
			plans[i].cancel(d, t.ID)
			queued = queued || fresh
			if fresh && item != rdb.ClaimWaiting {
				d.leaser.QueueLocal(shard, t.ID, recs[i].ID, plans[i].due)
			}
			results[i] = d.notAttempted(eventID, t, recs[i], plans[i], reply[1+i])
			continue
		}
		results[i].Delivery = &recs[i].Delivery // settle applies the outcome to it
		attempts = append(attempts, i)
	}
	if queued {
		d.bodies.Put(bodyKey, body, time.Now())
		d.wake.Poke()
	}
	if len(attempts) == 0 { // duplicates, or every attempt left to the worker
		return results
	}
	batch := worker.NewOutcomeBatch(shard, worker.SettleLinger(d.opts.Timeout), d.settle, d.leaser.RequeueInline)
	batch.Add(len(attempts))
	deferred := make([]string, len(targets)) // why an attempt was handed back to the worker
	attemptOne := func(i int) {
		t := targets[i]
		defer d.flights.Release(t.ID)
		handBack := func(o worker.Outcome, reason string) {
			o.Inline, deferred[i] = true, reason
			d.bodies.Put(bodyKey, body, time.Now()) // for this process's worker, as for a queued pair
			batch.Ended(ctx, recs[i], o, &results[i].Err)
		}
		// A rate-limit slot and a MaxConcurrency slot are taken once the claim has leased a fresh
		// pair: a duplicate costs neither, and a pair refused one goes back to its queue with its
		// outcome.
		if retryIn, ok := takeRateSlot(ctx, d.rdb, d.keys, t); !ok {
			handBack(worker.HandBack(recs[i], d.now().Add(retryIn)), overRateLimit)
			return
		}
		slot, ok := d.attempter.TakeConcurrencySlot(ctx, t)
		if !ok {
			handBack(worker.WaitForSlot(recs[i], d.now().Add(worker.ConcurrencyRecheck)), worker.AtMaxConcurrency)
			return
		}
		res := d.send(ctx, t, recs[i], body)
		d.attempter.ReleaseConcurrencySlot(ctx, t.ID, slot)
		o := worker.Decide(recs[i], res, d.opts.RetrySchedule, d.lease, d.now())
		o.Inline = true
		if d.breaker.FailingNow(t.ID) {
			d.countNow(ctx, recs[i], &o)
		}
		batch.Ended(ctx, recs[i], o, &results[i].Err)
	}
	// One goroutine per attempt but the last, which the caller makes: its stack is grown already.
	var wg sync.WaitGroup
	for _, i := range attempts[:len(attempts)-1] {
		wg.Go(func() { attemptOne(i) })
	}
	attemptOne(attempts[len(attempts)-1])
	wg.Wait()
	for i, reason := range deferred {
		if reason != "" && results[i].Err == nil {
			results[i].Err = fmt.Errorf("webhooks: delivery %s: %s: %w", recs[i].ID, reason, ErrDeferred)
		}
	}
	return results
}

// notAttempted is the Result of a target this call makes no attempt for: a duplicate, a fresh
// delivery left to the worker (with the plan's reason, wrapping ErrDeferred, when one was), or a
// reply the claim script should not give.
func (d *Dispatcher) notAttempted(eventID string, t *storedWebhook, rec *rdb.Record, p targetPlan, item any) Result {
	res := Result{WebhookID: t.ID}
	switch item := item.(type) {
	case int64:
		res.Delivery = &rec.Delivery
		if p.reason != "" {
			res.Err = fmt.Errorf("webhooks: delivery %s: %s: %w", rec.ID, p.reason, ErrDeferred)
		}
	case string:
		res.Duplicate = true
		dup, err := rdb.ParseRecord(rec.ID, item)
		if err != nil {
			// Claimed all the same: the pair is recorded, only not readable.
			dup = &rdb.Record{Delivery: Delivery{ID: rec.ID, WebhookID: t.ID, EventID: eventID}}
			res.Err = err
		}
		res.Delivery = &dup.Delivery
	default:
		res.Err = fmt.Errorf("webhooks: claim event %s: unexpected reply %v", eventID, item)
	}
	return res
}

// targetPlan is how a claim creates one target's delivery.
type targetPlan struct {
	inline bool      // leased for an attempt this call makes, holding one of its webhook's in-flight slots
	due    time.Time // when the worker may take it: the lease's end when leased
	reason string    // why a Dispatch makes no attempt ("" for Enqueue); a parked delivery's LastError
	parked bool      // its webhook's circuit is open
}

// cancel gives back the in-flight slot of a plan whose attempt will not be made.
func (p *targetPlan) cancel(d *Dispatcher, webhookID string) {
	if p.inline {
		d.flights.Release(webhookID)
	}
	p.inline = false
}

// plan decides, per target, whether this call attempts it inline or leaves it to the worker: a
// webhook whose circuit is open is parked until its probe, one at its in-flight limit is due at once
// for the worker. Enqueue attempts nothing, and reads only circuits already cached. A webhook's
// RateLimit and MaxConcurrency are taken after the claim, by fresh pairs only (claimAndAttemptFor).
func (d *Dispatcher) plan(ctx context.Context, targets []*storedWebhook, inline bool) []targetPlan {
	now := d.now()
	plans := make([]targetPlan, len(targets))
	ids := make([]string, len(targets))
	for i, t := range targets {
		ids[i] = t.ID
	}
	var circuits []Health // targets' order
	if inline {
		circuits = d.breaker.Circuits(ctx, ids)
	} else {
		circuits = d.breaker.Cached(now, ids)
	}
	waitFrom := d.flights.Now() // a call waits for its in-flight slots Timeout at most, all webhooks together
	for i, t := range targets {
		p := &plans[i]
		p.due = now
		switch h := circuits[i]; {
		case h.State == CircuitOpen || h.State == CircuitProbing:
			p.due, p.parked = types.Later(h.OpenUntil, now), true
			p.reason = breaker.ParkedReason(h, p.due)
		case !inline:
		case !d.flights.Acquire(ctx, t.ID, waitFrom):
			p.reason = "webhook at its in-flight limit in this process: attempt left to the worker"
		default:
			p.inline, p.due = true, now.Add(d.lease)
		}
	}
	// An inline lease starts once the call has every slot it waited for: the wait takes nothing from
	// the attempt's lease.
	if leased := d.now(); leased.After(now) {
		for i := range plans {
			if plans[i].inline {
				plans[i].due = leased.Add(d.lease)
			}
		}
	}
	return plans
}

// newRecords builds the records a claim creates for the targets of one event, as planned: leased for
// an inline first attempt, or due for the worker (parked ones saying why).
// scoped is the event id as scoped by its tenant, which names the pair (scopedEventID).
func (d *Dispatcher) newRecords(retention time.Duration, scoped, eventID, eventType string, targets []*storedWebhook, plans []targetPlan) []*rdb.Record {
	now := d.now()
	recs := make([]*rdb.Record, len(targets))
	for i, t := range targets {
		recs[i] = &rdb.Record{Delivery: Delivery{ID: d.keys.DeliveryID(t.ID, scoped), WebhookID: t.ID, EventID: eventID,
			EventType: eventType, Status: StatusPending, NextAttemptAt: rdb.MilliTime(plans[i].due.UnixMilli()),
			CreatedAt: rdb.MilliTime(now.UnixMilli()), UpdatedAt: rdb.MilliTime(now.UnixMilli()),
			ExpiresAt: rdb.MilliTime(now.UnixMilli() + retention.Milliseconds())}}
		token := rdb.NewToken() // also tells this call's records from another call's
		if plans[i].inline {
			recs[i].HoldLease(token, plans[i].due)
		} else {
			recs[i].Token, recs[i].LeaseState = token, rdb.LeaseNone
			if plans[i].parked {
				recs[i].LastError = plans[i].reason
			}
		}
	}
	return recs
}

// newKeys is the keyspace of opts' KeyPrefix, read by the first call that needs it (loadKeys).
func newKeys(opts Options) rdb.Keys { return rdb.NewKeys(opts.KeyPrefix, opts.Shards, DefaultShards) }

// overRateLimit is why an inline attempt refused a rate-limit slot is left to the worker.
const overRateLimit = "webhook over its rate limit: attempt left to the worker"

// takeRateSlot takes a slot of t's RateLimit for an attempt now (always granted to a webhook with no
// RateLimit); ok is false when no slot is free now, or Redis did not answer, and retryIn says when
// the next one is.
func takeRateSlot(ctx context.Context, c redis.UniversalClient, keys rdb.Keys, t *storedWebhook) (retryIn time.Duration, ok bool) {
	if t.RateLimit <= 0 {
		return 0, true
	}
	delays, retryIn, err := ratelimit.Take(ctx, c, keys.Rate(t.ID), t.RateLimit, 1, 0)
	return retryIn, err == nil && len(delays) > 0
}
