// Package webhooks delivers signed webhooks idempotently: each (webhook, event id) pair is delivered
// once, however often and however concurrently its event is dispatched, by any number of service
// replicas sharing one Redis (or Redis Cluster).
//
//	d, err := webhooks.New(rdb, webhooks.Options{})
//	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: "https://example.com/hooks", Events: []string{"pool.*"}})
//	results, err := d.Dispatch(ctx, webhooks.Event{Type: "pool.created", ID: "pool-42", Data: pool})
//	go d.Run(ctx) // the retry worker, in every replica
//
// Example (quickStart) handles the errors of New, Create and Dispatch; the other examples show one
// feature each.
//
// # Guarantees
//
// Each is held by a test that fails when it breaks, on miniredis, a real Redis and a Redis Cluster.
//
//   - One delivery per pair. Dispatch claims every (webhook, event id) pair by creating its delivery
//     record with SET NX, in the same Lua script that creates its schedule entry and its index entry.
//     Any number of calls, sequential or concurrent, from one process or many, make one record and one
//     series of attempts per pair.
//   - Duplicates return the original. A repeated call returns the existing Delivery with
//     Result.Duplicate set, whatever its status, and sends nothing.
//   - Accepted means recorded. When Dispatch returns a nil error, every target's pair is durably
//     recorded (sent, scheduled or a duplicate) and every Result has a Delivery. A target that could
//     not be claimed makes the error wrap ErrNotAccepted, and dispatching the event again is safe.
//   - Failed stays failed. When the retry schedule is exhausted the delivery is failed, and Dispatch
//     never sends it again; only Redeliver does, and concurrent Redeliver calls reset it once.
//   - Claim and record live and die together: the claim is the record, one key with the expiry
//     Options.Retention, which Redeliver extends. The event body lives exactly as long as its
//     longest-lived record (with Options.ReplayIndex, at least Retention, for ReplayMissing, whose
//     index of events is pruned to Retention as it is written); a schedule entry whose record has expired is dropped by the worker; the
//     per-webhook index keys expire with their newest record and trim entries older than a retention
//     whenever they are written, and listings skip expired entries. No key that grows with the number
//     of events lives forever.
//   - Crash safety. A delivery is created already leased for its first attempt. If the process dies
//     before or during that attempt, a worker of any replica attempts it once the lease expires. Every
//     attempt ends within what is left of its lease, so the two never overlap.
//   - Replica safety. Workers lease due deliveries atomically; two workers never attempt the same due
//     delivery at once, and an attempt whose lease expired cannot overwrite a newer attempt's outcome
//     (outcomes are written only under the lease token they were attempted with).
//   - Isolation. Dispatch returns a Result per target; one subscriber's failure or slowness does not
//     hide another's outcome.
//   - A bad subscriber hurts no one but itself. After Options.BreakAfter consecutive failed attempts
//     (timeouts, connection errors, 5xx, 429), counted by every replica together, a webhook's circuit
//     opens: Dispatch no longer waits for it, its new deliveries are recorded parked (pending, LastError
//     says so) with their retry budget kept; when the open period ends one probe goes out, and its
//     success closes the circuit and the parked backlog is delivered (TestHungSubscriberOpensItsCircuit,
//     TestBrokenWebhookOpensItsCircuitAtOnce). The count is exactly consecutive in the order Redis
//     records outcomes, so a webhook that never fails BreakAfter times in a row keeps its circuit closed
//     at any concurrency and replica count (TestCircuitCountIsExactlyConsecutive,
//     TestFlakyWebhookKeepsItsCircuitClosed).
//     Random failures open the circuit exactly once per run of BreakAfter failures in the order Redis
//     counted them, within the rule's own odds (TestRandomFailuresOpenTheCircuitOnlyOnTheirOdds).
//     A webhook hung from the start holds at most Options.MaxInFlightPerWebhook attempts of a
//     Dispatcher, inline included, and the worker shares its slots among webhooks in turn, so a hung
//     webhook never holds them all nor delays another's due deliveries (TestHungWebhookDoesNotHoldTheWorker,
//     TestHungWebhookHoldsItsCapInline); one hung after being fast holds at most the limit it had
//     reached, then the cap (TestHungAfterFastWebhookHoldsItsLimit). The limit follows the webhook's
//     health, and a Dispatch at it waits in turn for the slots the webhook's own attempts free, so a
//     burst to healthy webhooks makes its first attempts inline (TestFastWebhooksGetTheirFirstAttemptsInline,
//     TestInFlightCapTracksHealth, TestInFlightWaitersAreServedInTurn,
//     TestWaitingForASlotTakesNothingFromTheLease); replicas never wait idle while
//     deliveries are due (TestReplicasDoNotIdleWhileDeliveriesAreDue). Run holds at most Concurrency
//     attempts and twice as many deliveries leased ahead, though two of its passes lease at once
//     (TestRunHoldsConcurrencyAttemptsAndTwiceAsManyLeasedAhead), fewer ahead once attempts are slow
//     (TestLeasedAheadFollowsAttemptTimes); with fewer slots than webhooks due, every webhook is served
//     in turn (TestScarceSlotsAreSharedInTurn); a delivery leased ahead that waited too long for a slot
//     goes back to its queue at once, and a probe among them gives its probe back
//     (TestLeasedAheadThatWaitedTooLongGoesBackAtOnce, TestProbeHandedBackIsGivenBack).
//   - Subscribers are protected from us. A webhook's RateLimit (requests per second) holds across every
//     replica: each attempt takes a slot from a limiter on Redis's clock, spaced exactly, and a delivery
//     over the limit waits, it is not failed (TestRateLimitHoldsAcrossReplicas).
//   - Parking never outlives a record. New requires Retention ≥ Options.MinRetention() (with the breaker
//     on, MinRetention + DisableAfter + MaxBreakFor; TestOptionsMinRetentionIsNewsFloor); a webhook whose failures began DisableAfter ago is disabled at its next
//     failed probe, and its parked deliveries then fail; a retry that would end after its record's
//     expiry fails at once instead (TestParkingNeverOutlivesTheRecord).
//   - Tenants are isolated. An event reaches only webhooks of its own tenant (Event.Tenant,
//     Webhook.Tenant; none reaches only none); event ids are scoped by tenant, so two tenants' "evt_1"
//     are two events with two bodies; ListTenant and the Portal show one tenant's webhooks only
//     (TestTenantIsolation, TestSameEventIDTwoTenants, TestPortal).
//   - Ordered delivery per key. For one webhook, the deliveries of events with the same non-empty
//     Event.OrderKey (within a tenant) are attempted one at a time, in the order the events were
//     accepted, the next only once the previous one succeeded or failed for good
//     (Options.BlockKeyOnFailure: until it is redelivered and succeeds); other keys, webhooks and
//     unordered events do not wait. An event id keeps its first key: another key is refused with
//     ErrOrderKeyConflict (TestOrderedDeliveryIsSequentialAcrossReplicas,
//     TestOrderedHeadFailingForGood, TestOrderKeyOfAnEventID).
//   - Safe egress. By default no request goes to loopback, private, link-local, metadata or other
//     special addresses (checked on the resolved IP at connect time), redirects are not followed,
//     response bodies are read up to 64 KiB, and every attempt has a timeout.
//
// Delivery is at least once under faults: an attempt whose outcome could not be recorded (the process
// died, Redis failed) is attempted again after its lease. Every attempt of one delivery carries the
// same webhook-id header, so receivers can drop the rare repeat.
//
// # What Dispatch returns
//
// Dispatch claims every (webhook, event id) pair of the event in one round trip, then makes the first
// attempt of each pair it created, concurrently, and records the outcomes once every attempt has
// ended (one write), an outcome at most Timeout/10 (250ms at most) after its attempt ended when others
// still run. Its error says whether the event was accepted:
//
//   - nil: every target's pair is recorded (sent, scheduled for a retry, or a duplicate) and every
//     Result has a non-nil Delivery.
//   - an error wrapping ErrInvalidEvent: the event fails validation or cannot be encoded; nothing was
//     claimed.
//   - an error wrapping ErrNotAccepted, with each failed target's cause joined: at least one target
//     could not be claimed (Redis failed, the context ended), or the subscribers could not be resolved
//     (then with no Results). Dispatch the event again: that is safe, since the pairs that were
//     recorded come back as duplicates. Result.Accepted (a non-nil Delivery) tells which targets were
//     accepted.
//
// A recorded pair's Result.Err may still be set. It wraps ErrDeferred when the attempt was left to the
// worker: the claim's reply came too late for a whole attempt within the lease, the caller's context
// ended mid-attempt, or Redis failed while the outcome was being written; a worker attempts the
// delivery once its lease expires. It wraps ErrLeaseLost when another attempt took the delivery over,
// and ErrCorruptRecord for a duplicate whose record cannot be decoded. An HTTP failure is not an error:
// the Delivery is pending, with LastError and NextAttemptAt. SendTest follows the same contract.
//
// # Dispatch or Enqueue
//
// Dispatch makes the first attempt inline, so its Results show the subscriber's answer. Enqueue claims
// and schedules in one round trip and returns; Run makes the attempt: in this process at once, in
// other replicas within Shards/16 idle polls of at most 250ms (an idle poll reads 16 shards'
// schedules), 1s with the default 64 shards. A Dispatch also leaves an attempt to the worker
// (ErrDeferred, the pair recorded) when the webhook's circuit is open, when this Dispatcher already
// has as many attempts in flight to it as its limit and the webhook ends none for Timeout/2 (see
// Options.MaxInFlightPerWebhook), or when it is over its RateLimit. Run must run
// somewhere: in every replica, or at least in one.
//
// # Tenants, filters, headers, keys
//
// Webhook.Tenant puts a webhook in one customer's space; Event.Tenant sends an event to that space
// only. Options.MaxWebhooksPerTenant bounds a tenant's webhooks (ErrTenantQuota); DeleteTenant removes
// them all. Webhook.Filter selects events (see Filters). Webhook.Headers
// adds request headers (ReservedHeaders are refused). A webhook created with Asymmetric signs with
// ed25519 (Standard Webhooks v1a, "whsk_" key kept by the library, "whpk_" PublicKey for receivers);
// Verify accepts either kind of key, and a rotation signs with both during its grace period.
//
// # Endpoint authentication and secrets at rest
//
// Webhook.Auth authenticates attempts: basic, bearer, OAuth2 client credentials (one token shared by
// every replica through Redis, fetched again once on a 401) or a TLS client certificate; the API shows
// it as set, never its credentials. Options.SecretKeys seals secrets, private keys and credentials in
// Redis (AES-256-GCM); a key it does not hold fails with ErrSecretKey, and WebhookRepo.Reencrypt
// rotates keys. See the README's "Endpoint authentication" and "Secrets at rest".
//
// # Filters
//
// Webhook.Filter is a JSON object evaluated against the event as {"type": <type>, "data": <data>},
// checked before the claim, so a filtered-out webhook gets no delivery. A key names a field: "type",
// "data", or a path below them, nested ({"data": {"total": …}}) or dotted ({"data.total": …}); paths
// walk objects only. A field's value is a condition object, or any other JSON value meaning $eq.
// Several keys must all hold. The operators: $eq and $neq (JSON equality: numbers numerically, objects
// whatever their key order, values of different kinds never equal), $gt $gte $lt $lte (numbers
// numerically, strings by bytes), $in and $nin (a list of values), $exist (true or false; null is
// present), $startsWith and $endsWith (strings), $and and $or (non-empty lists of filters), $not (a
// filter). When the field is an array, a condition holds if the whole array or any one element
// satisfies it, and the negations hold only if none does. Numbers compare exactly as decimals,
// whatever their length. A filter is at most 8 KiB, 256 JSON values and 16 levels deep; one that is
// not valid is refused at Create and Update with ErrInvalidWebhook naming where. The event's data is
// decoded once per event whatever the number of filtered webhooks, and $in looks an element up by
// hash whatever the number of listed values: a 250-value $in of floats against an event of 4,000
// floats allocates at most 20 MB per Enqueue (TestFilterInFloatsBounded, TestFilterDataDecodedOnce).
// {"type": "order.paid", "data.total": {"$gte": 100}, "data.tags": {"$nin": ["test"]}} selects paid
// orders of at least 100 not tagged "test".
//
// # Portal
//
// PortalToken(tenant, ttl) makes a token signed with Options.PortalKey that names one tenant; Portal
// serves Handler's routes restricted to that tenant (another tenant's ids answer 404; a missing,
// tampered or expired token 401), for a SaaS to let its customers manage their own endpoints.
//
// # Operational webhooks
//
// With Options.OperationalEvents the library dispatches its own events — circuit.opened,
// circuit.closed, webhook.failing (the run of failures reached half of DisableAfter), webhook.disabled
// and delivery.failed — as ordinary signed deliveries to the webhooks that subscribe to them by type or
// prefix (`circuit.*`; `*` alone does not select them). Their data is an OperationalData. An event
// about a tenant's webhook goes to that tenant's subscribers and to those with no tenant, never to
// another tenant's; an event about a webhook never goes to that webhook, and a failed operational
// delivery sends no delivery.failed. The event id is derived from the transition, so replicas that
// notice the same one send one event. The README's "Operational webhooks" documents each payload.
//
// # The failed-delivery policy
//
// Dispatch of a pair whose delivery failed returns the failed record with Duplicate set and sends
// nothing. Producers replay events for their own reasons (an indexer re-scans blocks, a queue
// redelivers); a replay must not turn into a re-send the subscriber did not ask for, nor reset a retry
// budget the subscriber already exhausted. Re-sending is an operator's decision: Redeliver gives the
// delivery the whole retry schedule again, keeps its id, event and attempt history, and extends its
// record (its claim) to Retention from then.
//
// # Retries
//
// A failed attempt (a non-2xx status, a redirect, a timeout, a connection error) leaves the delivery
// pending with its next attempt after Options.RetrySchedule's next delay (default 5s, 5m, 30m, 2h, 5h,
// 10h, 10h, each ±20%); a 429 or 503 with Retry-After waits at least that long (up to an hour). A 410
// Gone fails the delivery and disables the webhook. Run, in every replica, makes the retries. A
// webhook deleted or disabled while deliveries are pending makes them fail when next due, with a
// LastError that says why; Redeliver can revive them once the webhook is enabled again.
//
// Options.Retention (default 7 days) is how long a record, and so its claim, is kept. New refuses a
// Retention shorter than Options.MinRetention(), the longest a delivery can stay pending (6d16h20m6s
// with the defaults, 40h10m6s with the breaker off), so that no claim expires while its delivery may
// still be retried or wait parked.
//
// # Registry
//
// Webhooks live in Redis with an index by subscription pattern (`pool.created`, `pool.*` matching any
// depth below pool, `*`), so resolving subscribers costs the same with ten webhooks or ten thousand.
// A process keeps what it resolved for at most a second: a change made by any replica is seen by every
// replica's next Dispatch within one second, and at once by the replica that made it. A webhook
// disabled at dispatch time gets no delivery (a later dispatch after it is re-enabled creates its
// first); a URL or secret changed while a delivery is pending applies to its next attempt.
//
// # Wire format
//
// Requests follow Standard Webhooks: a JSON body {"id", "type", "timestamp", "data"}, and the headers
// webhook-id (the delivery id, stable across retries and redeliveries), webhook-timestamp and
// webhook-signature. Receivers check them with Verify, or with package
// github.com/smartdrop/webhooks/verify, which imports the standard library only, takes several keys
// and has an http.Handler middleware. Package webhookstest is a receiver for a
// service's own tests: it verifies each request, records it, answers by script (fail N times, hang,
// 410) and checks that an event arrived exactly once.
//
// # Key layout
//
// Keys of one event's deliveries share their shard's hash tag, shard = FNV-1a(event id, scoped by its
// tenant) mod Options.Shards (default 64, fixed per prefix once used), so one script claims and creates
// every target of a Dispatch in one round trip; each shard's tag is chosen by hash slot, so the shards
// split evenly over the masters of a cluster (shards.go). Each shard schedules per webhook
// (schedule.go): a zset of the webhooks with deliveries due and a queue per webhook, so leasing is fair
// across webhooks; an idle poll reads at most 16 shards. The schema comment at the top of
// delivery_repo.go lists every key the library writes, its type and its TTL (TestSchemaListsEveryKey
// fails on a key it does not list).
package webhooks
