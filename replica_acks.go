package webhooks

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// writeAcked runs a writing script (batched when ReplicaAcks is 0), then WAITs for Options.ReplicaAcks
// replicas on the master that took it, on the same connection (rdb.WriteAcked).
func (d *Dispatcher) writeAcked(ctx context.Context, script *redis.Script, keys []string, args ...any) rdb.AckedWrite {
	if d.opts.ReplicaAcks <= 0 {
		return rdb.AckedWrite{Cmd: d.scripts.Run(ctx, script, keys, args...)}
	}
	return rdb.WriteAcked(ctx, d.rdb, d.opts.ReplicaAcks, d.opts.ReplicaAckTimeout, script, keys, args...)
}
