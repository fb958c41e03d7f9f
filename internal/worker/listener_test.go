package worker

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// TestListenerHearsWakesAndEndsWithItsContext: once subscribed, a wake published on a shard's ready or
// inline channel lowers that shard's hint and pokes the worker; a payload that is no time changes
// nothing; when the context ends, Listen returns and leaves no goroutine of its own behind.
func TestListenerHearsWakesAndEndsWithItsContext(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_000_000)
	l, client, keys := newTestLeaser(t, now)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln := NewListener(ListenerConfig{Redis: client, Keys: keys, LoadKeys: l.cfg.LoadKeys, Hints: l.Hints,
		Log: slog.New(slog.DiscardHandler)})
	wake, subscribed, done := NewWake(), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		ln.Listen(ctx, wake, func() { close(subscribed) })
	}()
	select {
	case <-subscribed:
	case <-time.After(10 * time.Second):
		t.Fatal("never subscribed")
	}
	h, nowMs := l.Hints(), now.UnixMilli()
	p := h.Plan(nowMs, ScanHinted) // every shard read (none was yet), and empty; the sweep now
	none := make([]int64, len(p.Inline))
	for i := range none {
		none[i] = math.MaxInt64
	}
	h.Read(p, nowMs, 8, make([][]rdb.ReadyEntry, len(p.Ready)), none)
	wake.Sleep(ctx, 0) // the subscription's own poke, used up
	require.Greater(t, h.Next(nowMs).UnixMilli(), nowMs+1000, "nothing known before the wakes")

	publish := func(channel, payload string) {
		t.Helper()
		require.NoError(t, client.Publish(ctx, channel, payload).Err())
	}
	publish(keys.Ready(7), "not a time")
	publish(keys.Inline(9), strconv.FormatInt(nowMs+1000, 10))
	wake.Wait(ctx)
	eventually(t, func() bool { return h.Next(nowMs).UnixMilli() == nowMs+1000 }, "the inline zset's wake is heard")
	assert.Equal(t, []int{9}, h.Plan(nowMs+1000, ScanHinted).Inline, "read at the lease's end")
	publish(keys.Ready(7), strconv.FormatInt(nowMs+500, 10))
	eventually(t, func() bool { return h.Next(nowMs).UnixMilli() == nowMs+500 }, "the ready zset's wake is heard")
	assert.Equal(t, []int{7}, h.Plan(nowMs+500, ScanHinted).Ready)

	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Listen did not return when its context ended")
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	assert.NotContains(t, stacks, "worker.(*Listener)", "no goroutine of the Listener outlives it")
	assert.False(t, strings.Contains(stacks, "(*PubSub).ReceiveTimeout"), "no receive outlives it")
}

// eventually polls cond every millisecond until it holds, for at most 10s.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", msg)
		}
	}
}
