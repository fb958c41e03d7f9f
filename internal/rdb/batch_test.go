package rdb

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScriptBatcherCoalescesConcurrentCalls: 64 concurrent calls, each answered with its own reply,
// in far fewer round trips than calls, also when the server has lost its scripts.
func TestScriptBatcherCoalescesConcurrentCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	client := tr.newClient(t)
	rt := &roundTrips{}
	client.AddHook(rt)
	b := NewScriptBatcher(client, nil)
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
				got, err := b.Run(ctx, echoScript, []string{"{" + tr.prefix + ":0}:k"}, fmt.Sprint(i)).Text()
				assert.NoError(t, err)
				assert.Equal(t, fmt.Sprint(i), got, "each caller gets its own reply")
			})
		}
		require.Eventually(t, func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return len(b.queue) >= 63
		}, 5*time.Second, 10*time.Millisecond, "callers queue behind the one in flight")
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
	b := NewScriptBatcher(client, nil)
	gate := make(chan struct{})
	rt.hold.Store(&gate)
	key := []string{"{" + tr.prefix + ":0}:k"}

	first := make(chan error, 1)
	go func() { first <- b.Run(ctx, echoScript, key, "first").Err() }()
	require.Eventually(t, func() bool { return rt.n.Load() == 1 }, 5*time.Second, 10*time.Millisecond, "the first call is in flight")

	cctx, cancel := context.WithCancel(ctx)
	quitter := make(chan error, 1)
	go func() { quitter <- b.Run(cctx, echoScript, key, "quitter").Err() }()
	stayer := make(chan error, 1)
	go func() { stayer <- b.Run(ctx, echoScript, key, "stayer").Err() }()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue) == 2
	}, 5*time.Second, 10*time.Millisecond, "two callers queue")
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
	b := NewScriptBatcher(client, nil)
	key := []string{"{" + tr.prefix + ":0}:k"}
	func() {
		defer func() { assert.Equal(t, "hook exploded", recover()) }()
		b.Run(ctx, echoScript, key, "boom")
	}()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := b.Run(cctx, echoScript, key, "after").Text()
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
	b := NewScriptBatcher(client, nil)
	key := []string{"{" + tr.prefix + ":0}:k"}
	require.NoError(t, echoScript.Load(ctx, client).Err())
	rt.n.Store(0)
	cmds := b.RunTogether(ctx, []ScriptRun{{Script: echoScript, Keys: key, Args: []any{"a"}}, {Script: echoScript, Keys: key, Args: []any{"b"}}})
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
		wg.Go(func() { assert.Equal(t, fmt.Sprint(i), b.Run(ctx, echoScript, key, fmt.Sprint(i)).Val()) })
		if i == 0 {
			require.Eventually(t, func() bool { return rt.n.Load() == 2 }, 5*time.Second, 10*time.Millisecond, "the first call is in flight")
		}
	}
	require.Eventually(t, queued(1), 5*time.Second, 10*time.Millisecond, "the second call queues")
	for i := range 2 * maxScriptBatch {
		wg.Go(func() {
			cmds := b.RunTogether(ctx, []ScriptRun{{Script: echoScript, Keys: key, Args: []any{fmt.Sprint(i, "a")}}, {Script: echoScript, Keys: key, Args: []any{fmt.Sprint(i, "b")}}})
			assert.Equal(t, fmt.Sprint(i, "a"), cmds[0].Val())
			assert.Equal(t, fmt.Sprint(i, "b"), cmds[1].Val())
		})
	}
	require.Eventually(t, queued(1+4*maxScriptBatch), 5*time.Second, 10*time.Millisecond, "callers queue behind the one in flight")
	rt.hold.Store(nil)
	close(gate)
	wg.Wait()
	assert.False(t, b.sending, "the batcher is idle again")
}
