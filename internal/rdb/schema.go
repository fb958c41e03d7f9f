package rdb

// Redis schema: every key the library writes, one line per key pattern (TestSchemaListsEveryKey reads
// this table, and fails on a key it does not list, of another type, or on a line no key matches).
// P is Options.KeyPrefix; s is the event's shard, Layout.ShardOf(event id) in [0, Shards). Every key of
// one event's deliveries carries its shard's hash tag, written {P:s} below: it is {P:t<n>}, chosen by
// hash slot (tags.go), so every script touches one hash slot, and the shards spread the load evenly
// over the masters of a Redis Cluster. The registry's keys share the tag {P:registry}; a rate limiter
// and an OAuth2 token have tags of their own; a tenant's test-send limiters share the tenant's. Keys
// are built in Go (Keys, keys.go) and passed in KEYS; ids follow the tag, so no id can change which
// slot a key hashes to (a tenant in a tag is a name of [A-Za-z0-9_.-], without braces). <event_id> is
// scoped by tenant (ScopedEventID), <pattern> is a subscription pattern (`pool.*`); a name written
// <name?> may be empty.
//
//	{P:s}:rec:<h>                          string  the pair's claim and delivery record (record.go)  TTL Retention
//	{P:s}:evt:<event_id>                   string  the event's fingerprint, then its request body, stored once per
//	                                               event (event_store.go)   TTL ≥ every record of the event, or
//	                                               Options.PayloadRetention from its last claim that created a record
//	{P:s}:ready                            zset    webhook id -> at most when its earliest delivery in the shard is due,
//	                                               or later while the webhook is parked (ms) (worker.Leaser); an entry
//	                                               whose queue is empty is removed by the next worker to read it
//	{P:s}:q:<webhook_id>                   zset    delivery id -> next attempt, or lease end while leased (ms); pending
//	                                               only
//	{P:s}:inline                           zset    delivery id + webhook id (InlineEntry) -> lease end (ms):
//	                                               deliveries leased by their claims for Dispatch's inline attempt
//	                                               (worker/leaser_inline.go)
//	{P:s}:list:<webhook_id>                stream  entries {d: delivery hash, raw, x: record expiry (ms)}, id <ms>-<seq> of
//	                                               its creation or Redeliver; trimmed on write, TTL ≥ newest entry
//	{P:s}:tlist:<tenant>                   stream  the same entries for every webhook of one tenant (a portal's search,
//	                                               internal/index); the webhooks of no tenant have none
//	{P:s}:tevents                          zset    event id -> accepted (ms): the replay index of the events of no tenant
//	                                               (Options.ReplayIndex; internal/replay); pruned to Retention on write,
//	                                               TTL ≥ newest entry
//	{P:s}:tevents:<tenant>                 zset    the same for one tenant's events
//	{P:s}:evt:<event_id>                   string  for an ordered event (Event.OrderKey), in its id's shard: "\x00" +
//	                                               its order key, the marker that keeps the id to that key   TTL Retention+5m
//	{P:s}:oevt:<event_id>                  string  an ordered event's request body, in the shard of its (tenant, order
//	                                               key) (Keys.OrderShard), which its delivery ids carry
//	                                               TTL as {P:s}:evt:<event_id>'s
//	{P:s}:seq:<webhook_id>:<order_key>     list    delivery ids of the (webhook, key) in claim order; only the head is
//	                                               in the webhook's queue   TTL ≥ Retention from the last append
//	{P:s}:blocked                          zset    "<webhook_id>:<order_key>" -> its list's expiry (ms), for lists with
//	                                               deliveries waiting behind the head (Stats.BlockedKeys)
//	{P:registry}:webhooks                  hash    webhook id -> webhook JSON (with secrets, sealed with
//	                                               Options.SecretKeys; webhook_record.go), the only copy of it
//	{P:registry}:sub:<pattern>             hash    webhook id -> "", enabled webhooks with no tenant subscribed to
//	                                               pattern only
//	{P:registry}:t:<tenant>:sub:<pattern>  hash    the same for one tenant's enabled webhooks (tenant.go)
//	{P:registry}:t:<tenant>:all            hash    every webhook of the tenant: id -> "" (tenant.go)
//	{P:registry}:circuits                  hash    webhook id -> its circuit and run of failed attempts,
//	                                               "failures:since:openUntil:openFor:probeUntil:token" (internal/breaker);
//	                                               no TTL: a success, or Delete, removes the field
//	{P:registry}:hourly:<webhook_id>       hash    attempts per hour by outcome over the last 24 hours: s<h>/f<h> ->
//	                                               successes/failures in hour h (Unix hours; hourly.go), and ok -> the
//	                                               newest success's answer (Unix ms, for the circuit rule); written by
//	                                               the circuit count; TTL 25 h from the first count of its newest hour
//	{P:registry}:shards                    string  the shard count, "<S>" (Keys.Load); no TTL
//	{P:registry}:event_types               hash    event type name -> its JSON (EventType): the catalog, the operator's,
//	                                               one for every tenant (event_types.go); no TTL
//	{P:registry}:event_types:version       string  a random token replaced by every change of the catalog, which each
//	                                               process's cache compares (internal/eventtypes); no TTL
//	{P:<action>:tenant:<tenant?>}          string  a tenant's limiter of an action (<action>: tests for SendTest,
//	                                               resends for Redeliver, retries for RetryNow, probes for ProbeNow;
//	                                               "" for the webhooks of no tenant): the start of its next free slot
//	                                               (µs, Redis time) (internal/ratelimit)  TTL 1 s after that slot
//	{P:<action>:tenant:<tenant?>}:webhook:<webhook_id>  string  a webhook's limiter of the action, in its tenant's
//	                                               hash tag, taken with the tenant's in one script: the start of its
//	                                               next free slot (µs, Redis time)  TTL 1 s after that slot
//	{P:ops:<webhook_id>}:failed:<ms>       string  how many of the webhook's deliveries failed for good in the window
//	                                               (types.OperationalWindow) starting at <ms>: one delivery.failed per
//	                                               webhook per window (internal/notify)  TTL two windows
//	{P:concurrency:<webhook_id>}           zset    the attempts holding a slot of the webhook's MaxConcurrency: token ->
//	                                               the end of its lease (ms, Redis time) (worker.Attempter)  TTL the
//	                                               last lease taken
//	{P:rate:<webhook_id>}                  string  the webhook's rate limiter: the start of its next free slot (µs,
//	                                               Redis time) (internal/ratelimit)  TTL 1 s after that slot
//	{P:oauth:<webhook_id>}                 string  the webhook's OAuth2 token, "<expiry ms> <credentials fingerprint>
//	                                               <token>", sealed with Options.SecretKeys (internal/endpoint)  TTL
//	                                               until shortly before the token expires
//	{P:oauth:<webhook_id>}:lock            string  a random token, held while one replica fetches the webhook's OAuth2
//	                                               token (SET NX PX)  TTL Options.Timeout, deleted by its holder
//
// UNIQUE (webhook_id, event_id): h is 24 hex digits of SHA-256(webhook id, 0, event id), and the
// delivery id is "dlv_" + the shard as two hex digits + h, so the pair names its record and its id,
// with keys of bounded length whatever the ids. The record is the claim: the claim script creates it
// with SET NX PX Retention, in the same step as its schedule entry and its index entry, so the claim
// and the record are one key with one expiry (Redeliver extends it). A separate claim key would cost
// about 130 bytes per delivery and could be evicted or expire apart from its record.
//
// Channels (no keys: nothing is stored). A script that makes something due sooner than a worker may
// know (lowers a webhook's ready score, or makes its entry the head of the inline zset) publishes when,
// in ms, on the channel named as the zset it wrote: {P:s}:ready or {P:s}:inline (lib/wake.lua, PUBLISH,
// which a Redis Cluster forwards to every node). Each Run subscribes to every shard's two channels
// (internal/worker/listener.go).
