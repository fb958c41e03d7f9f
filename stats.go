package webhooks

import (
	"context"

	"github.com/smartdrop/webhooks/internal/admin"
	"github.com/smartdrop/webhooks/internal/types"
)

// The bounds of Stats (internal/admin).
const (
	// StatsWebhooksPerShard bounds how many webhooks Stats examines in each shard: those whose
	// earliest delivery there is due first (the head of the shard's ready zset). A shard with more
	// webhooks queued is reported Truncated, and its counts are lower bounds.
	StatsWebhooksPerShard = admin.StatsWebhooksPerShard
	// StatsLeasesPerShard bounds how many deliveries Stats inspects in each shard to tell the leased
	// ones (an attempt in flight) from those merely scheduled within the next lease. Beyond it the
	// shard is reported Truncated and the rest count as scheduled.
	StatsLeasesPerShard = admin.StatsLeasesPerShard
)

type (
	// Stats is a snapshot of the delivery backlog, as Dispatcher.Stats reads it (internal/types).
	Stats = types.Stats
	// ShardStats are the backlog figures of one event shard (internal/types).
	ShardStats = types.ShardStats
)

// Stats reads a snapshot of the delivery backlog across all shards: deliveries due now, scheduled
// later and leased (in flight), the age of the oldest due delivery, and the open circuits, in total
// and per shard. It writes nothing.
//
// Its cost does not grow with the backlog. It makes at most three pipelined round trips, of at most
// 5×Shards+1, Shards and Shards commands (twice as many scripts' commands on a server that lost the scripts):
//
//  1. per shard ZCARD and ZRANGE of the ready zset (the first StatsWebhooksPerShard webhooks), ZCARD,
//     ZCOUNT and the head of the inline zset (inline attempts: leased, or due once their lease ended),
//     and one HGETALL of the circuits hash (O(webhooks with failures), not of deliveries);
//  2. per shard one read-only script over the queues of the webhooks read: per queue ZCARD, two
//     ZCOUNTs, a ZRANGE of its head and at most StatsLeasesPerShard ids in all (O(log n) each);
//  3. per shard one read-only script reading the lease byte of those ids' records (GETRANGE).
//
// So Redis does O(Shards × (StatsWebhooksPerShard × log n + StatsLeasesPerShard)) work: cheap enough to
// scrape every few seconds. Beyond the bounds the figures are lower bounds and Truncated says so. It
// is a snapshot, not a transaction: deliveries that move while it reads may be counted twice or not at
// all. A lease taken by a replica whose Options.Timeout is longer than this Dispatcher's may end
// beyond the window it inspects, and then counts as scheduled.
func (d *Dispatcher) Stats(ctx context.Context) (*Stats, error) { return d.admin.BacklogStats(ctx) }
