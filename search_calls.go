package webhooks

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// statsCall is one script run of the search of deliveries (delivery_search.go), one per shard.
type statsCall struct {
	shard  int
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
}

// evalAll runs the calls through rdb.EvalAll (EVALSHA, then EVAL for a server that lacks the script)
// and sets each call's cmd. It returns an error only when a call has none of its own.
func (d *Dispatcher) evalAll(ctx context.Context, calls []statsCall) error {
	runs := make([]rdb.ShardCall, len(calls))
	for i, c := range calls {
		runs[i] = rdb.ShardCall{Shard: c.shard, Script: c.script, Keys: c.keys, Args: c.args}
	}
	err := rdb.EvalAll(ctx, d.rdb, runs)
	for i := range calls {
		calls[i].cmd = runs[i].Cmd
	}
	return err
}
