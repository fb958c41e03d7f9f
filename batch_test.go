package webhooks

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestScriptBatcherCoalescesConcurrentCalls: 64 concurrent calls, each answered with its own reply,
// in far fewer round trips than calls, also when the server has lost its scripts.
func TestScriptBatcherCoalescesConcurrentCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	client := tr.newClient(t)
	rt := &roundTrips{}
	client.AddHook(rt)
	b := &scriptBatcher{rdb: client}
	for _, flush := range []bool{false, true} {
		if flush {
			require.NoError(t, tr.rdb.ScriptFlush(ctx).Err())
		}
		// Hold the first call so the others queue behind it.
		gate := make(chan struct{})
		rt.hold.Store(&gate)
		rt.n.Store(0)
		var wg sync.WaitGroup
		for i := range 64 {
			wg.Go(func() {
				got, err := b.run(ctx, echoScript, []string{"{" + tr.prefix + ":0}:k"}, fmt.Sprint(i)).Text()
				assert.NoError(t, err)
				assert.Equal(t, fmt.Sprint(i), got, "each caller gets its own reply")
			})
		}
		eventually(t, 5*time.Second, func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return len(b.queue) >= 63
		}, "callers queue behind the one in flight")
		rt.hold.Store(nil)
		close(gate)
		wg.Wait()
		assert.LessOrEqual(t, int(rt.n.Load()), 8, "64 calls in a handful of round trips (flushed scripts: %t)", flush)
		assert.False(t, b.sending, "the batcher is idle again")
	}
}

// TestScriptBatcherWaiterGivesUp: a caller whose context ends while queued returns at once; the queue
// goes on without it.
func TestScriptBatcherWaiterGivesUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	client := tr.newClient(t)
	rt := &roundTrips{}
	client.AddHook(rt)
	b := &scriptBatcher{rdb: client}
	gate := make(chan struct{})
	rt.hold.Store(&gate)
	key := []string{"{" + tr.prefix + ":0}:k"}

	first := make(chan error, 1)
	go func() { first <- b.run(ctx, echoScript, key, "first").Err() }()
	eventually(t, 5*time.Second, func() bool { return rt.n.Load() == 1 }, "the first call is in flight")

	cctx, cancel := context.WithCancel(ctx)
	quitter := make(chan error, 1)
	go func() { quitter <- b.run(cctx, echoScript, key, "quitter").Err() }()
	stayer := make(chan error, 1)
	go func() { stayer <- b.run(ctx, echoScript, key, "stayer").Err() }()
	eventually(t, 5*time.Second, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue) == 2
	}, "two callers queue")
	cancel()
	require.ErrorIs(t, <-quitter, context.Canceled, "the quitter returns without waiting for the batch")
	rt.hold.Store(nil)
	close(gate)
	require.NoError(t, <-first)
	require.NoError(t, <-stayer, "the caller behind the quitter is still served")
	b.mu.Lock()
	defer b.mu.Unlock()
	assert.Empty(t, b.queue)
	assert.False(t, b.sending)
}

// panicOnce panics in the first command or pipeline it sees.
type panicOnce struct {
	passHook
	done atomic.Bool
}

func (h *panicOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.done.CompareAndSwap(false, true) {
			panic("hook exploded")
		}
		return next(ctx, cmd)
	}
}

// TestScriptBatcherSurvivesAPanic: a panic while a batch is sent reaches the leader, and the batcher
// goes on serving later calls instead of leaving them queued for ever.
func TestScriptBatcherSurvivesAPanic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	client := tr.newClient(t)
	client.AddHook(&panicOnce{})
	b := &scriptBatcher{rdb: client}
	key := []string{"{" + tr.prefix + ":0}:k"}
	func() {
		defer func() { assert.Equal(t, "hook exploded", recover()) }()
		b.run(ctx, echoScript, key, "boom")
	}()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := b.run(cctx, echoScript, key, "after").Text()
	require.NoError(t, err, "the batcher is not wedged")
	assert.Equal(t, "after", got)
}

// TestScriptBatcherRunsTogether: calls queued together go out in one pipeline, and each gets its own
// reply, also when many callers queue pairs at once and batches are cut at maxScriptBatch between the
// calls of a pair.
func TestScriptBatcherRunsTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	client := tr.newClient(t)
	rt := &roundTrips{}
	client.AddHook(rt)
	b := &scriptBatcher{rdb: client}
	key := []string{"{" + tr.prefix + ":0}:k"}
	require.NoError(t, echoScript.Load(ctx, client).Err())
	rt.n.Store(0)
	cmds := b.runTogether(ctx, []scriptRun{{echoScript, key, []any{"a"}}, {echoScript, key, []any{"b"}}})
	require.Len(t, cmds, 2)
	assert.Equal(t, "a", cmds[0].Val())
	assert.Equal(t, "b", cmds[1].Val())
	assert.EqualValues(t, 1, rt.n.Load(), "one round trip for both")

	gate := make(chan struct{})
	rt.hold.Store(&gate)
	var wg sync.WaitGroup
	queued := func(n int) func() bool {
		return func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) >= n }
	}
	for i := range 2 { // one call in flight (held), then one queued: the pairs behind it straddle batches
		wg.Go(func() { assert.Equal(t, fmt.Sprint(i), b.run(ctx, echoScript, key, fmt.Sprint(i)).Val()) })
		if i == 0 {
			eventually(t, 5*time.Second, func() bool { return rt.n.Load() == 2 }, "the first call is in flight")
		}
	}
	eventually(t, 5*time.Second, queued(1), "the second call queues")
	for i := range 2 * maxScriptBatch {
		wg.Go(func() {
			cmds := b.runTogether(ctx, []scriptRun{{echoScript, key, []any{fmt.Sprint(i, "a")}}, {echoScript, key, []any{fmt.Sprint(i, "b")}}})
			assert.Equal(t, fmt.Sprint(i, "a"), cmds[0].Val())
			assert.Equal(t, fmt.Sprint(i, "b"), cmds[1].Val())
		})
	}
	eventually(t, 5*time.Second, queued(1+4*maxScriptBatch), "callers queue behind the one in flight")
	rt.hold.Store(nil)
	close(gate)
	wg.Wait()
	assert.False(t, b.sending, "the batcher is idle again")
}
