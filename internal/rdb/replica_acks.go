package rdb

// The root's Options.ReplicaAcks: WAIT after claims and outcome writes.
//
// WAIT counts the writes of the connection it is sent on, so it goes on the connection that made the
// write: each write is sent as a pipeline [script, WAIT n timeout] on the client of the master that owns
// the write's slot (ClusterClient.MasterForKey; a plain *redis.Client's pipeline holds one
// connection). One master's WAIT therefore never holds up a write to another master, and writes to
// the same master from other goroutines go on other connections meanwhile. These writes bypass the
// script batcher: a batch pipeline would make every call in it wait for the slowest master's WAIT.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotAcked is the error of a write that Redis made but fewer than the replicas asked for
// acknowledged in time (Options.ReplicaAcks, Options.ReplicaAckTimeout).
var ErrNotAcked = errors.New("webhooks: write not acknowledged by enough replicas (ReplicaAcks)")

// AckedWrite is a script write made under ReplicaAcks: the script's reply, and whether its WAIT fell
// short (AckErr wraps ErrNotAcked; the script's reply stands all the same).
type AckedWrite struct {
	*redis.Cmd
	AckErr error
}

// WriteAcked runs a writing script, then WAITs for acks replicas (at most timeout) on the master of
// client that took it, on the same connection.
func WriteAcked(ctx context.Context, client redis.UniversalClient, acks int, timeout time.Duration, script *redis.Script, keys []string, args ...any) AckedWrite {
	var node redis.Cmdable = client
	switch c := client.(type) {
	case *redis.ClusterClient:
		n, err := c.MasterForKey(ctx, keys[0])
		if err != nil {
			ReloadOnTransport(client, err)
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(err)
			return AckedWrite{Cmd: cmd}
		}
		node = n
	case *redis.Client:
		node = c
	}
	run := func(eval func(pipe redis.Pipeliner) *redis.Cmd) (*redis.Cmd, *redis.Cmd) {
		pipe := node.Pipeline()
		cmd := eval(pipe)
		wait := pipe.Do(ctx, "wait", acks, timeout.Milliseconds())
		_, _ = pipe.Exec(ctx) // errors are per command
		return cmd, wait
	}
	cmd, wait := run(func(p redis.Pipeliner) *redis.Cmd { return script.EvalSha(ctx, p, keys, args...) })
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		cmd, wait = run(func(p redis.Pipeliner) *redis.Cmd { return script.Eval(ctx, p, keys, args...) })
	}
	if err := cmd.Err(); err != nil {
		// A node client follows no redirect: a stale slot map shows as MOVED here.
		ReloadOnTransport(client, err)
		return AckedWrite{Cmd: cmd}
	}
	w := AckedWrite{Cmd: cmd}
	switch n, err := wait.Int64(); {
	case err != nil:
		ReloadOnTransport(client, err)
		w.AckErr = fmt.Errorf("%w: WAIT: %w", ErrNotAcked, err)
	case n < int64(acks):
		w.AckErr = fmt.Errorf("%w: %d of %d replicas within %s", ErrNotAcked, n, acks, timeout)
	}
	return w
}
