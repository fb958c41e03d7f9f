package types

import "time"

// Stats is a snapshot of the delivery backlog, as Dispatcher.Stats reads it. Counts are of pending
// deliveries; a delivery that succeeded or failed for good is in none of them.
type Stats struct {
	// At is when the snapshot was taken (the Dispatcher's clock).
	At time.Time
	// Due is how many deliveries are due now and not leased: waiting for a worker. A delivery whose
	// lease expired (its worker died) is due again.
	Due int64
	// Scheduled is how many deliveries wait for a later time: a retry, or a probe of their webhook's
	// open circuit.
	Scheduled int64
	// Leased is how many deliveries a worker (or Dispatch, inline) holds the lease of: in flight.
	Leased int64
	// OldestDueAt is when the oldest delivery due became due (for one whose lease expired, when its
	// lease ended); zero when nothing is due.
	OldestDueAt time.Time
	// OldestDueAge is At - OldestDueAt, in whole milliseconds, 0 when nothing is due: how far behind
	// the workers are.
	OldestDueAge time.Duration
	// Webhooks is how many (webhook, shard) queues hold pending deliveries.
	Webhooks int64
	// OpenCircuits is how many webhooks have an open circuit (including those probing).
	OpenCircuits int
	// BlockedKeys is how many (webhook, order key) sequences have deliveries waiting behind their
	// head (Event.OrderKey): keys whose head is in flight, retrying, parked, or failed and holding
	// its key (Options.BlockKeyOnFailure).
	BlockedKeys int64
	// Truncated is set when a shard had more to examine than the bounds allow (StatsWebhooksPerShard,
	// StatsLeasesPerShard, of the root package): the counts are then lower bounds (Leased may be
	// counted as Scheduled).
	Truncated bool
	// Shards are the same figures per event shard, in shard order.
	Shards []ShardStats
}

// ShardStats are the backlog figures of one event shard.
type ShardStats struct {
	Shard       int
	Due         int64
	Scheduled   int64
	Leased      int64
	OldestDueAt time.Time
	// Webhooks is how many webhooks have deliveries queued in the shard (of those beyond the ones
	// examined, an upper bound: a ready entry outlives its emptied queue until a worker reads it);
	// Examined how many of its ready entries Stats read (at most StatsWebhooksPerShard).
	Webhooks, Examined int64
	Truncated          bool
}
