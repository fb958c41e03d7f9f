package webhooks

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/smartdrop/webhooks/internal/admin"
	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/sealed"
	"github.com/smartdrop/webhooks/internal/worker"
)

// Defaults of Options: a zero field takes these.
const (
	DefaultKeyPrefix   = "webhooks"
	DefaultRetention   = 7 * 24 * time.Hour
	DefaultTimeout     = 15 * time.Second
	DefaultConcurrency = 64
	// DefaultDisableAfter is how long a webhook's deliveries may all fail, with no success in between,
	// before the webhook is disabled.
	DefaultDisableAfter = 5 * 24 * time.Hour
	// DefaultBreakAfter is how many consecutive failed attempts open a webhook's circuit.
	DefaultBreakAfter = 5
	// DefaultBreakFor is a circuit's first open period.
	DefaultBreakFor = 30 * time.Second
	// DefaultReplicaAckTimeout bounds each WAIT of Options.ReplicaAcks.
	DefaultReplicaAckTimeout = time.Second
	// DefaultMaxPayloadBytes is the default bound on an encoded request body.
	DefaultMaxPayloadBytes = 256 << 10
	// DefaultMaxTransformCost bounds one evaluation of a webhook's transformation, in CEL cost units.
	DefaultMaxTransformCost = 100_000
)

// Bounds of Options, and of what an attempt does.
const (
	// MaxTransformCost bounds Options.MaxTransformCost.
	MaxTransformCost = 10_000_000
	// MinPayloadRetention is the shortest Options.PayloadRetention but 0.
	MinPayloadRetention = time.Minute
	// MaxTimeout bounds Options.Timeout.
	MaxTimeout = 5 * time.Minute
	// MaxBreakFor bounds a circuit's open period, which doubles while its probes fail.
	MaxBreakFor = breaker.MaxBreakFor
	// MaxBreakAfter bounds Options.BreakAfter.
	MaxBreakAfter = rdb.MaxBreakAfter
	// MaxRetryAfter bounds how far a Retry-After header (on a 429 or 503) can push a retry beyond its
	// scheduled delay.
	MaxRetryAfter = worker.MaxRetryAfter
	// RetryJitter spreads each scheduled delay by ±20%.
	RetryJitter = worker.RetryJitter
	// maxResponseBody is how much of a response body an attempt reads before it stops.
	maxResponseBody = 64 << 10
	userAgent       = "smartdrop-webhooks/1"
)

// DefaultRetrySchedule returns the default delays after each failed attempt: 5s, 5m, 30m, 2h, 5h, 10h,
// 10h (about 27.6 hours in all, eight attempts), each spread by ±20%.
func DefaultRetrySchedule() []time.Duration {
	return []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
}

// Options configure a Dispatcher. The zero value of every field means its default; New refuses a value
// out of bounds with an error wrapping ErrInvalidOptions.
type Options struct {
	// KeyPrefix starts every Redis key. It must not contain '{' or '}'. Defaults to "webhooks".
	KeyPrefix string

	// PayloadRetention is how long an event's payload (its request body, the bytes every delivery of
	// it sends) is kept: from when the event was accepted (again, by a Dispatch or Enqueue that
	// created a delivery of it), then dropped by Redis's own expiry, while its delivery records keep
	// their attempts, status and metadata until Retention. After it the admin API and the UI say
	// "payload expired on …" (the delivery's creation + PayloadRetention), Redeliver refuses the
	// delivery with ErrPayloadExpired, a retry still due fails without an attempt (in words), and a
	// later event with the same id is no longer compared with it (ErrEventConflict). 0 (the default)
	// keeps a payload as long as its records. Else at least MinPayloadRetention (1 minute) and at
	// most Retention.
	PayloadRetention time.Duration

	// Retention is the life of a delivery record, which is also its claim: a pair dispatched again
	// within it is a duplicate, and after it the pair is forgotten. It must be at least
	// Options.MinRetention(), the longest a delivery may stay pending, so that no record can expire
	// while its delivery may still be retried or wait parked: the retry horizon
	// MinRetention(RetrySchedule, Timeout) (40h10m6s with the defaults), plus, with the circuit breaker on
	// (BreakAfter >= 0), DisableAfter + MaxBreakFor (6d16h20m6s in all with the defaults). Defaults to
	// 7 days.
	Retention time.Duration

	// RetrySchedule are the delays after each failed attempt; each must be positive. Its length is the
	// number of retries (the first attempt is not in it). Defaults to DefaultRetrySchedule().
	RetrySchedule []time.Duration

	// Timeout bounds one attempt, from connecting to reading the response (or a broker's confirm).
	// Leases derive from it: an attempt holds its delivery for Timeout + max(Timeout, 1s). At most
	// MaxTimeout (5 minutes). Defaults to 15s.
	Timeout time.Duration

	// HTTPClient is used for attempts when set. Its transport gets the egress guard, so it must then be
	// an *http.Transport (or nil), and redirects are never followed. Defaults to a client of the
	// library's own.
	HTTPClient *http.Client

	// Destinations serve URL schemes beyond http and https: a webhook's URL scheme picks the
	// destination its attempts go through (amqpdest for amqp and amqps, natsdest for nats, kafkadest
	// for kafka, or one of your own), and Create and Update refuse a URL whose scheme none serves.
	// Each scheme may be served by one destination; one of scheme http or https replaces the built-in
	// HTTP destination for it. A destination dials through the egress guard (Message.Dial), so
	// AllowPrivateNetworks and AllowedNetworks apply to brokers as to HTTP endpoints. Defaults to
	// none: HTTP only.
	Destinations []Destination

	// AllowPrivateNetworks turns the egress guard off: tests and local demos only. Defaults to false.
	AllowPrivateNetworks bool

	// AllowedNetworks are ranges the egress guard lets through although they are private; each must
	// be a valid prefix. Defaults to none.
	AllowedNetworks []netip.Prefix

	// RequireHTTPS refuses webhook URLs that are not https. Defaults to false.
	RequireHTTPS bool

	// MaxPayloadBytes bounds an encoded request body; a larger event is refused with ErrInvalidEvent.
	// Must not be negative. Defaults to DefaultMaxPayloadBytes (256 KiB).
	MaxPayloadBytes int

	// Concurrency bounds the attempts one worker (Run, ProcessDue) makes at once: Run starts another
	// as soon as one ends. Must not be negative. Defaults to 64.
	//
	// Each webhook may hold at most a share of the worker's and of Dispatch's attempts at once in this
	// process (a quarter of Concurrency at first, more for a webhook that answers fast), so a hung or
	// slow endpoint cannot take every slot; this is the engine's own protection, not a maximum: for a
	// hard bound across every replica set Webhook.MaxConcurrency (docs/delivery.md says how it works).
	Concurrency int

	// BreakAfter is how many consecutive failed attempts to a webhook (timeouts, connection errors,
	// 5xx, 429) open its circuit, by a rule that reordered answers cannot fool (docs/delivery.md,
	// "Circuit breaker"): each attempt is stamped when its request is sent and when its answer comes; a
	// success drops every failure sent before it was answered, and a failure counts only if it was sent
	// after the newest success was answered (a 4xx or 3xx neither counts nor resets). A process counts a
	// failure only once the attempts it sent to the webhook before that failure's answer have ended and
	// their successes are counted, so a webhook whose requests never fail BreakAfter times in a row keeps
	// its circuit closed whatever order the answers come back in; across replicas a success is counted
	// as its replica's count reaches Redis (one counted after BreakAfter failures of others closes the
	// circuit again), and stamps agree within the replicas' clocks' difference. The counts cost no round
	// trip of their own. While the circuit is open no attempt is made to it, Dispatch and Enqueue record
	// its deliveries parked until the circuit's next probe, and parked deliveries keep their retry
	// budget; attempts already in flight when it opened still count, and a success that leaves fewer
	// than BreakAfter failures in the run closes it. A webhook whose failures began DisableAfter
	// ago is disabled at its next failed probe, and its parked deliveries fail: parking never outlasts a
	// record (see Retention). Negative means never open: the count is still kept (at the same cost), for
	// DisableAfter. At most MaxBreakAfter (100). Defaults to 5.
	BreakAfter int

	// BreakFor is a circuit's first open period. When it ends one probe goes out (one attempt,
	// across every replica): success closes the circuit, failure opens it again for twice as long,
	// up to MaxBreakFor (10 minutes). Must not be negative nor above MaxBreakFor. Defaults to 30s.
	BreakFor time.Duration

	// MaxWebhooksPerTenant bounds the webhooks of one tenant (Webhook.Tenant): Create refuses one more
	// with an error wrapping ErrTenantQuota. Webhooks with no tenant are not bounded. Must not be
	// negative. Defaults to DefaultMaxWebhooksPerTenant (100).
	MaxWebhooksPerTenant int

	// PortalKey signs the tokens of the tenant portal (PortalToken, Portal): at least 32 bytes, kept
	// secret. Defaults to none: PortalToken then fails and Portal refuses every request.
	PortalKey []byte

	// SecretKeys encrypt secrets at rest (AES-256-GCM): every webhook's signing secret (and the one
	// it is rotating away from), ed25519 private key and endpoint credentials (Auth's password, bearer
	// token, OAuth2 client secret and client-certificate key, and the OAuth2 tokens cached in Redis) are
	// stored sealed, so Redis, its replicas and backups alone never reveal them. Each key is 32 random
	// bytes; the first seals, every one opens, so a key is rotated by putting the new one first,
	// running WebhookRepo.Reencrypt, then dropping the old one. A value sealed under a key not listed
	// fails with ErrSecretKey (its webhook is not attempted), never with a wrong signature. Webhooks
	// stored in clear are still read, and sealed when next saved. Defaults to none: secrets are stored
	// in clear, as before this option (a value already sealed then fails with ErrSecretKey).
	SecretKeys [][]byte

	// Logger receives the library's logs. Secrets and bodies are never logged. Defaults to none, but
	// for one warning every 10 s, through slog.Default(), while Run cannot reach Redis.
	Logger *slog.Logger

	// Hooks are callbacks on delivery outcomes. Defaults to none.
	Hooks Hooks

	// Tracer, when set, keeps each delivery's trace context and traces calls and attempts (see
	// Tracer; otelwebhooks implements it). Defaults to none.
	Tracer Tracer

	// Shards is the number of event shards: the unit that spreads deliveries over a Redis Cluster's
	// masters (each shard's keys share a hash tag chosen by slot, so S shards split evenly over any
	// even slot layout). It is fixed per KeyPrefix once used: the first Dispatcher to need it stores it
	// in Redis, and a Dispatcher set to another count fails the calls that need it with an error
	// wrapping ErrInvalidOptions (New reads nothing). 0 takes the stored count, or DefaultShards (64)
	// for a new prefix. At most MaxShards (256). An idle worker's Redis cost does not grow with it (see Run).
	Shards int

	// ReplicaAcks, when positive, makes every claim and every outcome write wait (WAIT) until this many
	// replicas of the master that took it have acknowledged it, for up to ReplicaAckTimeout. A claim
	// not acknowledged in time is not accepted (ErrNotAccepted; its record is kept, so dispatching the
	// event again returns it as a duplicate); an outcome not acknowledged in time is logged. The WAIT
	// goes to that master alone, on the connection that wrote: it never holds up writes to other
	// masters. Costs one round trip of the replica's replication per write (see BENCHMARKS.md).
	// Must not be negative. Defaults to 0 (no WAIT).
	ReplicaAcks int

	// ReplicaAckTimeout bounds each WAIT of ReplicaAcks. Defaults to 1s.
	ReplicaAckTimeout time.Duration

	// OperationalEvents makes the library send its own events about its webhooks — circuit.opened,
	// circuit.closed, webhook.failing, webhook.disabled, delivery.failed (see OperationalData) — as
	// ordinary deliveries to the webhooks that subscribe to them by name or prefix (`circuit.*`; `*`
	// alone does not select them): about a tenant's webhook to that tenant's subscribers and to those
	// with no tenant, about a webhook with no tenant to those with no tenant only, never to the webhook
	// the event is about. While it is set, Dispatch and Enqueue refuse these five types with
	// ErrInvalidEvent. Off, it costs nothing; on, a successful attempt costs nothing more, and a
	// transition (a circuit opening, a delivery failing for good) reads subscribers from the 1s cache and
	// claims one Enqueue per subscribed scope. Defaults to false.
	OperationalEvents bool

	// BlockKeyOnFailure decides what an ordered delivery (Event.OrderKey) that fails for good does to
	// the deliveries waiting behind it for the same (webhook, key). false (the default): the next one
	// goes on at once, so one bad event never stops its key. true: the key stays blocked, its later
	// deliveries waiting, until the failed one is redelivered (Redeliver) and succeeds or fails again;
	// for subscribers that must never see an event after a missing one. Every Dispatcher on a
	// KeyPrefix should set it alike: it is applied by whichever records the failure.
	BlockKeyOnFailure bool

	// ReplayIndex keeps, per tenant, an index of the events accepted within Retention, by when they
	// were accepted, for Dispatcher.ReplayMissing (which fails with ErrReplayIndexOff without it). Its
	// entry costs about 42 bytes of Redis memory per event for a 24-byte event id while a tenant has at
	// most 128 events per shard within Retention, about 118 bytes beyond (measured: BENCHMARKS.md,
	// "Replay index"), and one ZADD in the claim script that stores the event; with it on, an event
	// that no webhook takes is stored all the same (its body, for Retention, in one claim-script
	// call), so that a webhook created later can replay it. Only events accepted while it is on can
	// be replayed, and events with an Event.OrderKey are not indexed (a replay could not keep their
	// order). Defaults to false: the cost falls only on the users of replay.
	ReplayIndex bool

	// RequireEventTypes makes Dispatch and Enqueue (and Dispatcher.ValidateEvent) refuse, with
	// ErrInvalidEvent, an event whose type the catalog (Dispatcher.EventTypes) does not hold. The
	// library's own events (SendTest's webhook.test, OperationalEvents) are not checked. Defaults to
	// false: an unregistered type is delivered, and only a registered type with a Schema is validated.
	RequireEventTypes bool

	// MaxTransformCost bounds the work of a webhook's transformation (Webhook.Transform), in CEL cost
	// units (about one per operation, and per item a comprehension visits): each evaluation stops at
	// it, failing its delivery in words, and an expression whose estimated cost for an event whose
	// lists and strings hold 100 items is over it is refused when its webhook is saved. Must not be
	// negative; at most MaxTransformCost (10,000,000). Defaults to DefaultMaxTransformCost (100,000:
	// about 5 ms of evaluation on one core).
	MaxTransformCost int

	// DisableAfter disables a webhook whose attempts have failed for this long with no success in
	// between: when an attempt fails (any answer but a 2xx, with the breaker on or off) and the
	// webhook's run of failed attempts, as its circuit counts it across every replica, began at least
	// DisableAfter ago, it is disabled. Any success ends the run. Negative means never (only with the
	// breaker off). Defaults to DefaultDisableAfter (5 days).
	DisableAfter time.Duration
}

// MinRetention is the retry horizon of a retry schedule and an attempt timeout: the longest a delivery
// can stay pending for its retries, and so the shortest Retention New accepts with the circuit breaker
// off (see Options.MinRetention for any options). Each retry counts its delay at the jittered maximum
// (×(1+RetryJitter)), plus MaxRetryAfter (a 429 or 503 may ask for up to an hour more), plus one lease;
// the first attempt counts one lease. A lease is timeout + max(timeout, 1s).
func MinRetention(schedule []time.Duration, timeout time.Duration) time.Duration {
	return retryHorizon(schedule, leaseFor(timeout))
}

// MinRetention is the shortest Retention New accepts for these options (their zero fields taking
// their defaults): the retry horizon MinRetention(RetrySchedule, Timeout), plus, with the circuit
// breaker on (BreakAfter >= 0), DisableAfter + MaxBreakFor, the longest a delivery may wait parked
// behind an open circuit before its webhook is disabled.
func (o Options) MinRetention() time.Duration {
	o.fillDefaults()
	m := MinRetention(o.RetrySchedule, o.Timeout)
	if o.BreakAfter >= 0 {
		m += max(o.DisableAfter, 0) + MaxBreakFor
	}
	return m
}

// retentionError is New's error for a Retention below o.MinRetention(), naming the value to set (in
// whole days, rounded up), the floor and the options it comes from; o has its defaults.
func (o Options) retentionError() error {
	from := fmt.Sprintf("MinRetention(RetrySchedule, Timeout %s) = %s", o.Timeout, MinRetention(o.RetrySchedule, o.Timeout))
	if o.BreakAfter >= 0 {
		from += fmt.Sprintf(" + DisableAfter %s + MaxBreakFor %s, with the circuit breaker on (BreakAfter >= 0)", o.DisableAfter, MaxBreakFor)
	}
	floor := o.MinRetention()
	days := int((floor + 24*time.Hour - 1) / (24 * time.Hour))
	return fmt.Errorf("%w: set Options.Retention to at least %d days (%d * 24 * time.Hour): Retention %s is shorter than Options.MinRetention() = %s: %s",
		ErrInvalidOptions, days, days, o.Retention, floor, from)
}

// withDefaults returns the options with every zero field set to its default, or an error wrapping
// ErrInvalidOptions for a value out of bounds.
func (o Options) withDefaults() (Options, error) {
	o.fillDefaults()
	for _, check := range []func() error{o.checkDelivery, o.checkEngine, o.checkParking, o.checkTenancy} {
		if err := check(); err != nil {
			return o, err
		}
	}
	return o, nil
}

// fillDefaults sets every zero field to its default.
func (o *Options) fillDefaults() {
	orDefault(&o.KeyPrefix, DefaultKeyPrefix)
	orDefault(&o.Timeout, DefaultTimeout)
	orDefault(&o.Retention, DefaultRetention)
	orDefault(&o.MaxPayloadBytes, DefaultMaxPayloadBytes)
	orDefault(&o.MaxTransformCost, DefaultMaxTransformCost)
	orDefault(&o.Concurrency, DefaultConcurrency)
	orDefault(&o.BreakAfter, DefaultBreakAfter)
	orDefault(&o.BreakFor, DefaultBreakFor)
	orDefault(&o.DisableAfter, DefaultDisableAfter)
	orDefault(&o.MaxWebhooksPerTenant, DefaultMaxWebhooksPerTenant)
	orDefault(&o.ReplicaAckTimeout, DefaultReplicaAckTimeout)
	if o.RetrySchedule == nil {
		o.RetrySchedule = DefaultRetrySchedule()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// orDefault sets *v to def when it is the zero value.
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// checkDelivery checks what bounds one delivery: keys, attempts, retries, retention, payloads, egress.
func (o Options) checkDelivery() error {
	switch {
	case strings.ContainsAny(o.KeyPrefix, "{}"):
		return fmt.Errorf("%w: KeyPrefix must not contain '{' or '}'", ErrInvalidOptions)
	case o.Timeout < 0 || o.Timeout > MaxTimeout:
		return fmt.Errorf("%w: Timeout must be in (0, %s]", ErrInvalidOptions, MaxTimeout)
	case slices.ContainsFunc(o.RetrySchedule, func(d time.Duration) bool { return d <= 0 }):
		return fmt.Errorf("%w: RetrySchedule delays must be positive", ErrInvalidOptions)
	case o.MaxPayloadBytes < 0:
		return fmt.Errorf("%w: MaxPayloadBytes must be positive", ErrInvalidOptions)
	case o.MaxTransformCost < 0 || o.MaxTransformCost > MaxTransformCost:
		return fmt.Errorf("%w: MaxTransformCost must be in [1, %d]", ErrInvalidOptions, MaxTransformCost)
	case slices.ContainsFunc(o.AllowedNetworks, func(p netip.Prefix) bool { return !p.IsValid() }):
		return fmt.Errorf("%w: AllowedNetworks has an invalid prefix", ErrInvalidOptions)
	}
	return nil
}

// checkEngine checks the worker's and the breaker's bounds.
func (o Options) checkEngine() error {
	switch {
	case o.Concurrency < 0:
		return fmt.Errorf("%w: Concurrency must be positive", ErrInvalidOptions)
	case o.BreakAfter > MaxBreakAfter:
		return fmt.Errorf("%w: BreakAfter must be at most %d", ErrInvalidOptions, MaxBreakAfter)
	case o.BreakFor < 0 || o.BreakFor > MaxBreakFor:
		return fmt.Errorf("%w: BreakFor must be in (0, %s]", ErrInvalidOptions, MaxBreakFor)
	case o.Shards < 0 || o.Shards > MaxShards:
		return fmt.Errorf("%w: Shards must be in [1, %d]", ErrInvalidOptions, MaxShards)
	case o.ReplicaAcks < 0:
		return fmt.Errorf("%w: ReplicaAcks must not be negative", ErrInvalidOptions)
	case o.ReplicaAckTimeout < 0:
		return fmt.Errorf("%w: ReplicaAckTimeout must be positive", ErrInvalidOptions)
	}
	return nil
}

// checkTenancy checks the tenants' quota and the portal's key.
func (o Options) checkTenancy() error {
	switch {
	case o.MaxWebhooksPerTenant < 0:
		return fmt.Errorf("%w: MaxWebhooksPerTenant must be positive", ErrInvalidOptions)
	case o.PortalKey != nil && len(o.PortalKey) < admin.MinPortalKey:
		return fmt.Errorf("%w: PortalKey must be at least %d bytes", ErrInvalidOptions, admin.MinPortalKey)
	}
	if _, err := sealed.NewRing(o.SecretKeys); err != nil {
		return fmt.Errorf("%w: SecretKeys: %w", ErrInvalidOptions, err)
	}
	return nil
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
		h += time.Duration(float64(d)*(1+RetryJitter)) + MaxRetryAfter + lease
	}
	return h + lease
}

// checkParking checks that no record can expire while its delivery may be retried or wait parked
// behind an open circuit: with the breaker on, a webhook failing for DisableAfter is disabled at its
// next failed probe (at most MaxBreakFor later), and its parked deliveries then fail; so Retention must
// be at least o.MinRetention(), and DisableAfter must not be "never" with the breaker on.
func (o Options) checkParking() error {
	if o.BreakAfter >= 0 && o.DisableAfter < 0 {
		return fmt.Errorf("%w: with the circuit breaker on (BreakAfter >= 0), DisableAfter must not be negative: it bounds how long deliveries wait parked", ErrInvalidOptions)
	}
	if o.Retention < o.MinRetention() {
		return o.retentionError()
	}
	if o.PayloadRetention != 0 && (o.PayloadRetention < MinPayloadRetention || o.PayloadRetention > o.Retention) {
		return fmt.Errorf("%w: PayloadRetention %s must be 0 (as long as the records) or in [%s, Retention %s]",
			ErrInvalidOptions, o.PayloadRetention, MinPayloadRetention, o.Retention)
	}
	return nil
}

// payloadTTL is how long a claim keeps its event's body when its records are kept retention: the
// shorter of it and PayloadRetention.
func (o Options) payloadTTL(retention time.Duration) time.Duration {
	if o.PayloadRetention > 0 {
		return min(retention, o.PayloadRetention)
	}
	return retention
}
