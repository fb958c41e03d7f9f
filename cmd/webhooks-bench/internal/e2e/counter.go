package e2e

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Counter is a go-redis hook counting what a client sends: every Process call is one command and one
// round trip; every pipeline (or MULTI/EXEC transaction) is one round trip of len(cmds) commands (a
// transaction's MULTI and EXEC included). A script run is EVALSHA, plus EVAL when the script was not
// loaded yet.
type Counter struct {
	cmds  atomic.Int64
	trips atomic.Int64
}

// DialHook passes dials through.
func (c *Counter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts one command and one round trip.
func (c *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.trips.Add(1)
		c.cmds.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts one round trip of len(cmds) commands.
func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.trips.Add(1)
		c.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// Read returns the commands and round trips counted so far.
func (c *Counter) Read() (cmds, trips int64) { return c.cmds.Load(), c.trips.Load() }

// NewClient is the Redis client of one system, with a counting hook.
func NewClient(addr string, pool int) (*redis.Client, *Counter) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: pool})
	c := &Counter{}
	rdb.AddHook(c)
	return rdb, c
}
