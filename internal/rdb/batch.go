package rdb

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ScriptBatcher coalesces script calls made concurrently (by many goroutines calling Dispatch at once)
// into pipelines: one write and one read for the whole batch instead of one round trip each, on the
// client and on the Redis server alike. It needs no goroutine of its own: the first caller to find no
// batch in flight sends the calls waiting at that moment (its own among them) and, when done, hands the
// next batch to one of the callers that queued meanwhile. A lone caller is sent at once, so batching
// adds no latency; under load, batches grow to the number of concurrent callers.
//
// Each call is still one script run, atomic on its own; a batch is not a transaction.
type ScriptBatcher struct {
	client redis.UniversalClient
	merge  MergeFunc // nil for none

	mu      sync.Mutex
	queue   []*ScriptCall
	sending bool // a batch is in flight; whoever queues now waits to be sent or to lead
}

// MergeFunc rewrites a batch about to be sent, merging calls that can run as one (the root passes the
// circuit counts' merge): it returns the calls to send and split, which the batcher calls once the sent
// calls have their replies (or were not sent: a Cmd left nil), to give each merged call its own Cmd.
type MergeFunc func(batch []*ScriptCall) (sent []*ScriptCall, split func())

// NewScriptBatcher is a batcher of calls to client, its batches rewritten by merge (nil for none).
func NewScriptBatcher(client redis.UniversalClient, merge MergeFunc) *ScriptBatcher {
	return &ScriptBatcher{client: client, merge: merge}
}

// ScriptCall is one queued script run.
type ScriptCall struct {
	Ctx    context.Context
	Script *redis.Script
	Keys   []string
	Args   []any
	Cmd    *redis.Cmd
	// lead and result are guarded by the batcher's mu and set as wake is closed: the caller is to
	// send the next batch, or Cmd holds its reply.
	lead, result bool
	wake         chan struct{}
}

// maxScriptBatch bounds one pipeline.
const maxScriptBatch = 128

// scriptLanes is how many batches a Dispatcher keeps in flight at once, so that Redis runs one batch
// while the client encodes the next and decodes the last.
const scriptLanes = 4

// LaneBatcher spreads calls over several batchers, round robin.
type LaneBatcher struct {
	lanes [scriptLanes]ScriptBatcher
	next  atomic.Uint32
}

// NewLaneBatcher is a LaneBatcher of calls to client, its batches rewritten by merge (nil for none).
func NewLaneBatcher(client redis.UniversalClient, merge MergeFunc) *LaneBatcher {
	l := &LaneBatcher{}
	for i := range l.lanes {
		l.lanes[i].client, l.lanes[i].merge = client, merge
	}
	return l
}

// Run runs script on the next lane.
func (l *LaneBatcher) Run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return l.lanes[l.next.Add(1)%scriptLanes].Run(ctx, script, keys, args...)
}

// ScriptRun is one script call for RunTogether and RunNow.
type ScriptRun struct {
	Script *redis.Script
	Keys   []string
	Args   []any
}

// RunNow runs several scripts in one pipeline of its own, at once: for a caller that would otherwise
// queue behind the batches in flight (the worker's leases, behind a burst of claims). It returns their
// replies in order.
func (l *LaneBatcher) RunNow(ctx context.Context, runs ...ScriptRun) []*redis.Cmd {
	if len(runs) == 0 {
		return nil
	}
	calls := make([]*ScriptCall, len(runs))
	ctx = context.WithoutCancel(ctx) // sent: its reply is read whatever the caller's context does now
	for i, r := range runs {
		calls[i] = &ScriptCall{Ctx: ctx, Script: r.Script, Keys: r.Keys, Args: r.Args}
	}
	l.lanes[0].send(calls)
	out := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		out[i] = c.Cmd
	}
	return out
}

// RunTogether runs several scripts as Run does, queued together on one lane so that they go out in
// one pipeline (unless a batch is cut at maxScriptBatch between them). It returns their replies in order.
func (l *LaneBatcher) RunTogether(ctx context.Context, runs ...ScriptRun) []*redis.Cmd {
	return l.lanes[l.next.Add(1)%scriptLanes].RunTogether(ctx, runs)
}

// RunTogether queues runs at once and waits for each reply, leading a batch whenever it is handed one.
func (b *ScriptBatcher) RunTogether(ctx context.Context, runs []ScriptRun) []*redis.Cmd {
	calls := make([]*ScriptCall, len(runs))
	for i, r := range runs {
		calls[i] = &ScriptCall{Ctx: ctx, Script: r.Script, Keys: r.Keys, Args: r.Args, wake: make(chan struct{})}
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
			c.Cmd = redis.NewCmd(ctx)
			c.Cmd.SetErr(ctx.Err())
		case !c.result:
			b.lead(c)
		}
		out[i] = c.Cmd
	}
	return out
}

// Run runs script as script.Run would, batched with concurrent calls. The reply is read from the
// returned *redis.Cmd.
func (b *ScriptBatcher) Run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	c := &ScriptCall{Ctx: ctx, Script: script, Keys: keys, Args: args, wake: make(chan struct{})}
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
			return c.Cmd
		}
	}
	b.lead(c)
	return c.Cmd
}

// wait waits until c has its reply or is to lead. It reports false when ctx ended first; c is then
// withdrawn from the queue (or, already in flight, left to finish unheard).
func (b *ScriptBatcher) wait(ctx context.Context, c *ScriptCall) bool {
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
func (b *ScriptBatcher) lead(c *ScriptCall) {
	b.mu.Lock()
	n := min(len(b.queue), maxScriptBatch)
	batch := slices.Clone(b.queue[:n])
	b.queue = b.queue[n:]
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, x := range batch {
			if x.Cmd == nil {
				x.Cmd = redis.NewCmd(x.Ctx)
				x.Cmd.SetErr(errBatchAborted)
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
func (b *ScriptBatcher) send(batch []*ScriptCall) {
	if b.merge != nil {
		var split func()
		batch, split = b.merge(batch)
		defer split()
	}
	if len(batch) == 1 {
		c := batch[0]
		c.Cmd = c.Script.Run(c.Ctx, b.client, c.Keys, c.Args...)
		return
	}
	// The pipeline carries several callers' calls: one caller's context ending must not fail the
	// others. Each call is bounded by the client's own timeouts.
	ctx := context.WithoutCancel(batch[0].Ctx)
	pipe := b.client.Pipeline()
	for _, c := range batch {
		c.Cmd = c.Script.EvalSha(ctx, pipe, c.Keys, c.Args...)
	}
	_, _ = pipe.Exec(ctx) // errors are per command
	var missing []*ScriptCall
	for _, c := range batch {
		if err := c.Cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return
	}
	pipe = b.client.Pipeline()
	for _, c := range missing {
		c.Cmd = c.Script.Eval(ctx, pipe, c.Keys, c.Args...)
	}
	_, _ = pipe.Exec(ctx)
}
