package webhooks

// Options.ReplicaAcks: WAIT after claims and outcome writes.
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

	"github.com/redis/go-redis/v9"
)

// errNotAcked is the error of a write that Redis made but fewer than Options.ReplicaAcks replicas
// acknowledged within Options.ReplicaAckTimeout.
var errNotAcked = errors.New("webhooks: write not acknowledged by enough replicas (ReplicaAcks)")

// ackedWrite is a script write made under ReplicaAcks: the script's reply, and whether its WAIT fell
// short (ackErr wraps errNotAcked; the script's reply stands all the same).
type ackedWrite struct {
	*redis.Cmd
	ackErr error
}

// writeAcked runs a writing script (batched when ReplicaAcks is 0), then WAITs for Options.ReplicaAcks
// replicas on the master that took it, on the same connection.
func (d *Dispatcher) writeAcked(ctx context.Context, script *redis.Script, keys []string, args ...any) ackedWrite {
	if d.opts.ReplicaAcks <= 0 {
		return ackedWrite{Cmd: d.scripts.Run(ctx, script, keys, args...)}
	}
	var node redis.Cmdable = d.rdb
	switch c := d.rdb.(type) {
	case *redis.ClusterClient:
		n, err := c.MasterForKey(ctx, keys[0])
		if err != nil {
			d.reloadOnTransport(err)
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(err)
			return ackedWrite{Cmd: cmd}
		}
		node = n
	case *redis.Client:
		node = c
	}
	run := func(eval func(pipe redis.Pipeliner) *redis.Cmd) (*redis.Cmd, *redis.Cmd) {
		pipe := node.Pipeline()
		cmd := eval(pipe)
		wait := pipe.Do(ctx, "wait", d.opts.ReplicaAcks, d.opts.ReplicaAckTimeout.Milliseconds())
		_, _ = pipe.Exec(ctx) // errors are per command
		return cmd, wait
	}
	cmd, wait := run(func(p redis.Pipeliner) *redis.Cmd { return script.EvalSha(ctx, p, keys, args...) })
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		cmd, wait = run(func(p redis.Pipeliner) *redis.Cmd { return script.Eval(ctx, p, keys, args...) })
	}
	if err := cmd.Err(); err != nil {
		// A node client follows no redirect: a stale slot map shows as MOVED here.
		d.reloadOnTransport(err)
		return ackedWrite{Cmd: cmd}
	}
	w := ackedWrite{Cmd: cmd}
	switch n, err := wait.Int64(); {
	case err != nil:
		d.reloadOnTransport(err)
		w.ackErr = fmt.Errorf("%w: WAIT: %w", errNotAcked, err)
	case n < int64(d.opts.ReplicaAcks):
		w.ackErr = fmt.Errorf("%w: %d of %d replicas within %s", errNotAcked, n, d.opts.ReplicaAcks, d.opts.ReplicaAckTimeout)
	}
	return w
}
