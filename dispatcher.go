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

	"github.com/redis/go-redis/v9"
)

// Result is the outcome of a Dispatch (or Enqueue) for one subscribed webhook.
//
// The contract: a Result whose pair is recorded (sent, scheduled, or a duplicate) has a non-nil
// Delivery. Its Err, if any, wraps ErrDeferred (recorded and scheduled, but this call's attempt was
// not made or its outcome not written: a worker makes it), ErrLeaseLost or ErrCorruptRecord; the
// pair is accepted all the same. A Result whose pair could not be claimed has a nil Delivery and an
// Err saying why, and the call that returned it also returned an error wrapping ErrNotAccepted. An
// HTTP failure is not an error here but a pending Delivery with LastError and NextAttemptAt.
type Result struct {
	WebhookID string
	// Delivery is the pair's delivery: as this call's first attempt left it when the call created
	// it, or the existing record when Duplicate is set; nil only when the pair was not accepted.
	Delivery *Delivery
	// Duplicate is set when the pair had been dispatched before: nothing was sent.
	Duplicate bool
	// Err is this target's own problem; see the type's doc for what it means for the pair.
	Err error
}

// Accepted reports whether the pair is durably recorded: sent, scheduled or a duplicate.
func (r Result) Accepted() bool { return r.Delivery != nil }

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

// New returns a Dispatcher on rdb (a *redis.Client, *redis.ClusterClient or failover client).
func New(rdb redis.UniversalClient, opts Options) (*Dispatcher, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalidOptions)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	lease := leaseFor(opts.Timeout)
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
	if err := evt.validate(); err != nil {
		return nil, err
	}
	body, err := d.encode(evt)
	if err != nil {
		return nil, err
	}
	targets, err := d.webhooks.subscribers(ctx, evt.Type)
	if err != nil {
		return nil, fmt.Errorf("%w: event %s: %w", ErrNotAccepted, evt.ID, err)
	}
	results := d.deliver(ctx, evt.ID, evt.Type, body, targets)
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

// SendTest sends a `webhook.test` event with a fresh id (`test_` + random) to one webhook, whatever its
// subscriptions and even when it is disabled. It is never a duplicate of anything. Its error follows
// Dispatch's contract: ErrNotAccepted when the test delivery could not be claimed, ErrDeferred (with the
// Delivery) when its attempt was left to the worker.
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
	results := d.deliver(ctx, evt.ID, evt.Type, body, []*storedWebhook{s})
	if err := notAccepted(evt.ID, results); err != nil {
		return nil, err
	}
	return results[0].Delivery, results[0].Err
}

// deliver claims the pairs of one event and makes the first attempt of every fresh one.
func (d *Dispatcher) deliver(ctx context.Context, eventID, eventType string, body []byte, targets []*storedWebhook) []Result {
	results := make([]Result, len(targets))
	if len(targets) == 0 {
		return results
	}
	shard := shardOf(eventID)
	recs := d.newRecords(eventID, eventType, targets)
	reply, err := d.claim(ctx, shard, eventID, body, recs)
	if err != nil {
		for i, t := range targets {
			results[i] = Result{WebhookID: t.ID, Err: err}
		}
		return results
	}
	if stored, ok := reply[0].(string); ok {
		body = []byte(stored) // the event was stored by an earlier Dispatch: deliver what it stored
	}
	var wg sync.WaitGroup
	for i, t := range targets {
		results[i].WebhookID = t.ID
		switch item := reply[1+i].(type) {
		case int64:
			results[i].Delivery = &recs[i].Delivery // settle applies the outcome to it
			wg.Go(func() {
				o := d.decide(recs[i], d.attempt(ctx, t, recs[i], body))
				results[i].Err = d.settle(ctx, shard, []*record{recs[i]}, []outcome{o})[0]
			})
		case string:
			results[i].Duplicate = true
			rec, err := parseRecord(recs[i].ID, item)
			if err != nil {
				// Claimed all the same: the pair is recorded, only not readable.
				rec = &record{Delivery: Delivery{ID: recs[i].ID, WebhookID: t.ID, EventID: eventID}}
				results[i].Err = err
			}
			results[i].Delivery = &rec.Delivery
		default:
			results[i].Err = fmt.Errorf("webhooks: claim event %s: unexpected reply %v", eventID, reply[1+i])
		}
	}
	wg.Wait()
	return results
}

// newRecords builds the records a claim creates for the targets of one event, each leased for its
// first attempt.
func (d *Dispatcher) newRecords(eventID, eventType string, targets []*storedWebhook) []*record {
	now := d.now()
	leaseEnd := now.Add(d.lease)
	recs := make([]*record, len(targets))
	for i, t := range targets {
		recs[i] = &record{Delivery: Delivery{ID: deliveryIDFor(t.ID, eventID), WebhookID: t.ID, EventID: eventID,
			EventType: eventType, Status: StatusPending, NextAttemptAt: msTime(leaseEnd.UnixMilli()),
			CreatedAt: msTime(now.UnixMilli()), UpdatedAt: msTime(now.UnixMilli()),
			ExpiresAt: msTime(now.UnixMilli() + d.opts.Retention.Milliseconds())}}
		recs[i].holdLease(randomHex(tokenLen/2), leaseEnd)
	}
	return recs
}

// claim runs the claim script for new records of one event and returns its reply: {body stored
// earlier or nil, then per record 1 (created) or the existing record}. A reply lost in transport is
// asked for again: the script recognises its own run and reports the pairs it created as created.
func (d *Dispatcher) claim(ctx context.Context, shard int, eventID string, body []byte, recs []*record) ([]any, error) {
	keys := make([]string, 2, 2+2*len(recs))
	keys[0], keys[1] = d.keys.eventKey(shard, eventID), d.keys.scheduleKey(shard)
	args := make([]any, 4, 4+3*len(recs))
	args[0], args[1], args[2], args[3] = unixMilli(recs[0].CreatedAt), d.opts.Retention.Milliseconds(), recs[0].leaseEnd.UnixMilli(), body
	for _, r := range recs {
		keys = append(keys, d.keys.deliveryKey(shard, r.ID), d.keys.indexKey(shard, r.WebhookID))
		args = append(args, r.ID, indexedHash(r.ID), r.encode())
	}
	reply, err := d.scripts.run(ctx, claimScript, keys, args...).Slice()
	if err != nil && isTransient(err) && ctx.Err() == nil {
		reply, err = d.scripts.run(ctx, claimScript, keys, args...).Slice()
	}
	if err == nil && len(reply) != 1+len(recs) {
		err = fmt.Errorf("unexpected reply of %d items", len(reply))
	}
	if err != nil {
		return nil, fmt.Errorf("webhooks: claim event %s: %w", eventID, err)
	}
	return reply, nil
}
