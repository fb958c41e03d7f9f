package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// ShardCall is one script run of a read that runs a script per shard (EvalAll).
type ShardCall struct {
	Shard  int
	Script *redis.Script
	Keys   []string
	Args   []any
	Cmd    *redis.Cmd // set by EvalAll
}

// EvalAll runs the calls in one pipeline of EVALSHA, and those the server lacks the script of in a
// second one of EVAL, setting each call's Cmd. It returns an error only when a call has none of its
// own (the context's).
func EvalAll(ctx context.Context, c redis.UniversalClient, calls []ShardCall) error {
	if len(calls) == 0 {
		return nil
	}
	pipe := c.Pipeline()
	for i := range calls {
		calls[i].Cmd = calls[i].Script.EvalSha(ctx, pipe, calls[i].Keys, calls[i].Args...)
	}
	_, _ = pipe.Exec(ctx) // errors are per command
	var missing []int
	for i, call := range calls {
		if err := call.Cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return ctx.Err()
	}
	pipe = c.Pipeline()
	for _, i := range missing {
		calls[i].Cmd = calls[i].Script.Eval(ctx, pipe, calls[i].Keys, calls[i].Args...)
	}
	_, _ = pipe.Exec(ctx)
	return ctx.Err()
}
