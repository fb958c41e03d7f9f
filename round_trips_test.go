package webhooks

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

var echoScript = redis.NewScript(`return ARGV[1]`)

// roundTrips counts the client's round trips (a pipeline is one), and can hold them.
type roundTrips struct {
	passHook
	n    atomic.Int32
	hold atomic.Pointer[chan struct{}]
}

// isHandshake reports whether a command is part of go-redis's setup of a new connection (HELLO,
// CLIENT SETINFO), which a call pays only when the pool grows.
func isHandshake(c redis.Cmder) bool { return c.Name() == "hello" || c.Name() == "client" }

func (h *roundTrips) wait() {
	if c := h.hold.Load(); c != nil {
		<-*c
	}
}
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isHandshake(cmd) {
			return next(ctx, cmd) // a new pool connection's setup, not a round trip of the call
		}
		h.n.Add(1)
		h.wait()
		return next(ctx, cmd)
	}
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return !isHandshake(c) }) {
			return next(ctx, cmds)
		}
		h.n.Add(1)
		h.wait()
		return next(ctx, cmds)
	}
}
