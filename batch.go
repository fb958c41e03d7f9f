package webhooks

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// scriptBatcher coalesces script calls made concurrently (by many goroutines calling Dispatch at once)
// into pipelines: one write and one read for the whole batch instead of one round trip each, on the
// client and on the Redis server alike. It needs no goroutine of its own: the first caller to find no
// batch in flight sends the calls waiting at that moment (its own among them) and, when done, hands the
// next batch to one of the callers that queued meanwhile. A lone caller is sent at once, so batching
// adds no latency; under load, batches grow to the number of concurrent callers.
//
// Each call is still one script run, atomic on its own; a batch is not a transaction.
type scriptBatcher struct {
	rdb redis.UniversalClient

	mu      sync.Mutex
	queue   []*scriptCall
	sending bool // a batch is in flight; whoever queues now waits to be sent or to lead
}

// scriptCall is one queued script run.
type scriptCall struct {
	ctx    context.Context
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
	// lead and result are guarded by the batcher's mu and set as wake is closed: the caller is to
	// send the next batch, or cmd holds its reply.
	lead, result bool
	wake         chan struct{}
}

// maxScriptBatch bounds one pipeline.
const maxScriptBatch = 128

// scriptLanes is how many batches a Dispatcher keeps in flight at once, so that Redis runs one batch
// while the client encodes the next and decodes the last.
const scriptLanes = 4

// laneBatcher spreads calls over several batchers, round robin.
type laneBatcher struct {
	lanes [scriptLanes]scriptBatcher
	next  atomic.Uint32
}

func newLaneBatcher(rdb redis.UniversalClient) *laneBatcher {
	l := &laneBatcher{}
	for i := range l.lanes {
		l.lanes[i].rdb = rdb
	}
	return l
}

// run runs script on the next lane.
func (l *laneBatcher) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return l.lanes[l.next.Add(1)%scriptLanes].run(ctx, script, keys, args...)
}

// scriptRun is one script call for runTogether.
type scriptRun struct {
	script *redis.Script
	keys   []string
	args   []any
}

// runNow runs several scripts in one pipeline of its own, at once: for a caller that would otherwise
// queue behind the batches in flight (the worker's leases, behind a burst of claims). It returns their
// replies in order.
func (l *laneBatcher) runNow(ctx context.Context, runs ...scriptRun) []*redis.Cmd {
	if len(runs) == 0 {
		return nil
	}
	calls := make([]*scriptCall, len(runs))
	for i, r := range runs {
		calls[i] = &scriptCall{ctx: ctx, script: r.script, keys: r.keys, args: r.args}
	}
	l.lanes[0].send(calls)
	out := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		out[i] = c.cmd
	}
	return out
}

// runTogether runs several scripts as run does, queued together on one lane so that they go out in
// one pipeline (unless a batch is cut at maxScriptBatch between them). It returns their replies in order.
func (l *laneBatcher) runTogether(ctx context.Context, runs ...scriptRun) []*redis.Cmd {
	return l.lanes[l.next.Add(1)%scriptLanes].runTogether(ctx, runs)
}

// runTogether queues runs at once and waits for each reply, leading a batch whenever it is handed one.
func (b *scriptBatcher) runTogether(ctx context.Context, runs []scriptRun) []*redis.Cmd {
	calls := make([]*scriptCall, len(runs))
	for i, r := range runs {
		calls[i] = &scriptCall{ctx: ctx, script: r.script, keys: r.keys, args: r.args, wake: make(chan struct{})}
	}
	b.mu.Lock()
	b.queue = append(b.queue, calls...)
	lead := !b.sending
	b.sending = true
	b.mu.Unlock()
	out := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		switch {
		case i == 0 && lead:
			b.lead(c)
		case !b.wait(ctx, c):
			c.cmd = redis.NewCmd(ctx)
			c.cmd.SetErr(ctx.Err())
		case !c.result:
			b.lead(c)
		}
		out[i] = c.cmd
	}
	return out
}

// run runs script as script.Run would, batched with concurrent calls. The reply is read from the
// returned *redis.Cmd.
func (b *scriptBatcher) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	c := &scriptCall{ctx: ctx, script: script, keys: keys, args: args, wake: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	lead := !b.sending
	b.sending = true
	b.mu.Unlock()
	if !lead {
		if !b.wait(ctx, c) {
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(ctx.Err())
			return cmd
		}
		if c.result {
			return c.cmd
		}
	}
	b.lead(c)
	return c.cmd
}

// wait waits until c has its reply or is to lead. It reports false when ctx ended first; c is then
// withdrawn from the queue (or, already in flight, left to finish unheard).
func (b *scriptBatcher) wait(ctx context.Context, c *scriptCall) bool {
	select {
	case <-c.wake:
		return true
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.lead || c.result { // set together with closing wake
		return true
	}
	if i := slices.Index(b.queue, c); i >= 0 {
		b.queue = slices.Delete(b.queue, i, i+1)
	}
	return false
}

// errBatchAborted is the reply of a call whose batch was cut short by a panic in the sending
// goroutine (a go-redis hook, say).
var errBatchAborted = errors.New("webhooks: script batch aborted")

// lead sends the calls queued now, c (the head of the queue) among them, then wakes their callers and
// hands the lead to the first caller that queued meanwhile. It does so even if sending panics, so that
// no caller waits for ever; the panic then goes on up the leader's stack.
func (b *scriptBatcher) lead(c *scriptCall) {
	b.mu.Lock()
	n := min(len(b.queue), maxScriptBatch)
	batch := slices.Clone(b.queue[:n])
	b.queue = b.queue[n:]
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, x := range batch {
			if x.cmd == nil {
				x.cmd = redis.NewCmd(x.ctx)
				x.cmd.SetErr(errBatchAborted)
			}
			x.result = true
			if x != c {
				close(x.wake)
			}
		}
		if len(b.queue) > 0 {
			next := b.queue[0]
			next.lead = true
			close(next.wake)
		} else {
			b.sending = false
		}
	}()
	b.send(batch)
}

// send runs a batch as one pipeline of EVALSHA, falling back to EVAL for the scripts the server
// does not have (after a restart, a failover or SCRIPT FLUSH).
func (b *scriptBatcher) send(batch []*scriptCall) {
	batch, split := mergeCounts(batch)
	defer split()
	if len(batch) == 1 {
		c := batch[0]
		c.cmd = c.script.Run(c.ctx, b.rdb, c.keys, c.args...)
		return
	}
	// The pipeline carries several callers' calls: one caller's context ending must not fail the
	// others. Each call is bounded by the client's own timeouts.
	ctx := context.WithoutCancel(batch[0].ctx)
	pipe := b.rdb.Pipeline()
	for _, c := range batch {
		c.cmd = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // errors are per command
	var missing []*scriptCall
	for _, c := range batch {
		if err := c.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return
	}
	pipe = b.rdb.Pipeline()
	for _, c := range missing {
		c.cmd = c.script.Eval(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx)
}
