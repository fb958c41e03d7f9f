// Package replay sends again what a webhook was sent, or should have been: the events of a time
// window it has no delivery of (Replayer, the Dispatcher's ReplayMissing, over the replay index), and
// one delivery (Redeliverer, the Dispatcher's Redeliver).
//
// The replay index (Options.ReplayIndex): per tenant and event shard, a zset of the events the shard
// stored, by when they were accepted, so that ReplayMissing can find a tenant's events of a time
// window without scanning. The claim script writes an event's entry in the step that first stores its
// body (one ZADD), and prunes the entries older than a retention (ZREMRANGEBYSCORE) once per 1/64 of
// a retention per key and Dispatcher, when it also sets the key's TTL to a retention and 1/64 more
// (the root's indexTTLs): so the index holds about a retention of events, and a key no longer written
// expires. The entry is the event's id without its tenant (the key names the tenant), its score the
// accepted time (ms). Its Redis reads and writes are internal/rdb's; the registry, the claim and the
// attempt are the root's, through the fields of Replayer and Redeliverer.
package replay
