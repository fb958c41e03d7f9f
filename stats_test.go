package webhooks

import (
	"context"
	"fmt"
	"github.com/smartdrop/webhooks/internal/worker"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// commandCounter counts the commands a client sends (one per command, pipelined or not).
type commandCounter struct {
	passHook
	mu sync.Mutex
	n  int
}

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add(1)
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.add(len(cmds))
		return next(ctx, cmds)
	}
}

func (c *commandCounter) add(n int) { c.mu.Lock(); c.n += n; c.mu.Unlock() }

func (c *commandCounter) take() int { c.mu.Lock(); defer c.mu.Unlock(); n := c.n; c.n = 0; return n }

// TestStatsKnownBacklog builds a backlog of known shape, step by step, and checks every figure of
// Stats against it: due, oldest due age, scheduled retries, leased deliveries, queues and circuits.
func TestStatsKnownBacklog(t *testing.T) {
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{Concurrency: 4, RetrySchedule: []time.Duration{time.Minute}})
	setInFlightFloor(d, 16) // Concurrency 4 would give each webhook one slot: room for the leases below
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	a, b := mustCreate(t, d, rc, "t.*"), mustCreate(t, d, rc, "t.*")

	st, err := d.Stats(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.Due+st.Scheduled+st.Leased+st.Webhooks)
	assert.True(t, st.OldestDueAt.IsZero())
	assert.Len(t, st.Shards, shardCount)

	start := rdb.MilliTime(clock.Now().UnixMilli())
	shards := map[int]bool{}
	for i := range 10 {
		id := fmt.Sprintf("evt_%d", i)
		shards[shardOf(id)] = true
		_, err := d.Enqueue(ctx, Event{ID: id, Type: "t.x"})
		require.NoError(t, err)
	}
	clock.Advance(30 * time.Second)
	st, err = d.Stats(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 20, st.Due)
	assert.Zero(t, st.Scheduled)
	assert.Zero(t, st.Leased)
	assert.EqualValues(t, 2*len(shards), st.Webhooks, "one queue per webhook and shard")
	assert.Equal(t, start, st.OldestDueAt)
	assert.Equal(t, 30*time.Second, st.OldestDueAge)
	assert.False(t, st.Truncated)
	var perShard int64
	for s, sh := range st.Shards {
		assert.Equal(t, s, sh.Shard)
		perShard += sh.Due
		if shards[s] {
			assert.EqualValues(t, 2, sh.Webhooks)
			assert.Equal(t, start, sh.OldestDueAt)
		} else {
			assert.Zero(t, sh.Webhooks)
		}
	}
	assert.EqualValues(t, 20, perShard)

	// Four attempts fail: four retries are scheduled a minute (±20%) later.
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	st, err = d.Stats(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 16, st.Due)
	assert.EqualValues(t, 4, st.Scheduled)
	assert.Zero(t, st.Leased)
	assert.Equal(t, start, st.OldestDueAt)

	// Leased deliveries (an attempt in flight) count as leased, not due nor scheduled.
	jobs, _, _, err := d.leaser.Lease(ctx, 6, worker.ScanFull)
	require.NoError(t, err)
	require.NotEmpty(t, jobs)
	st, err = d.Stats(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, len(jobs), st.Leased)
	assert.EqualValues(t, 16-len(jobs), st.Due)
	assert.EqualValues(t, 4, st.Scheduled)

	// Once the leases expire, their deliveries are due again.
	clock.Advance(d.lease + time.Second)
	st, err = d.Stats(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.Leased)
	assert.EqualValues(t, 16, st.Due)
	assert.EqualValues(t, 4, st.Scheduled)

	// A ready entry left behind a queue that emptied (a worker corrects it when it reads it) counts
	// no webhook.
	require.NoError(t, tr.rdb.ZAdd(ctx, d.keys.Ready(0), redis.Z{Score: float64(start.UnixMilli()), Member: "wh_emptied"}).Err())
	st, err = d.Stats(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 2*len(shards), st.Webhooks, "the emptied queue's entry not counted")
	assert.EqualValues(t, 16, st.Due)

	// Circuits: one open, one probing, one failing but closed.
	now := clock.Now().UnixMilli()
	require.NoError(t, tr.rdb.HSet(ctx, d.keys.Circuits(),
		a.ID, fmt.Sprintf("5:%d:%d:30000:0:0:0::", now, now+30000),
		b.ID, fmt.Sprintf("6:%d:%d:30000:%d:0:0::x", now, now, now+5000),
		"wh_other", fmt.Sprintf("2:%d:0:0:0:0:0::", now)).Err())
	st, err = d.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, st.OpenCircuits)
}

// TestStatsTruncatesAtTheBound: a shard with more webhooks queued than StatsWebhooksPerShard is
// reported truncated, having examined only the bound.
func TestStatsTruncatesAtTheBound(t *testing.T) {
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	for range StatsWebhooksPerShard + 1 {
		mustCreate(t, d, rc, "t.x")
	}
	_, err := d.Enqueue(ctx, Event{ID: "evt_many", Type: "t.x"})
	require.NoError(t, err)
	st, err := d.Stats(ctx)
	require.NoError(t, err)
	assert.True(t, st.Truncated)
	sh := st.Shards[shardOf("evt_many")]
	assert.True(t, sh.Truncated)
	assert.EqualValues(t, StatsWebhooksPerShard+1, sh.Webhooks)
	assert.EqualValues(t, StatsWebhooksPerShard, sh.Examined)
	assert.EqualValues(t, StatsWebhooksPerShard, st.Due, "a lower bound")
}

// TestStatsCommandCountIsBounded: Stats sends the same bounded number of commands for a backlog of
// 2 deliveries and of 400, and every script it runs keeps its keys in one slot.
func TestStatsCommandCountIsBounded(t *testing.T) {
	ctx := context.Background()
	tr := newTestRedis(t)
	client := tr.newClient(t)
	counter := &commandCounter{}
	slots := &scriptKeys{calls: map[string][][]string{}}
	client.AddHook(counter)
	client.AddHook(slots)
	d := newTestDispatcherOn(t, client, tr, Options{})
	rc := newReceiver(t)
	mustCreate(t, d, rc, "t.x")
	mustCreate(t, d, rc, "t.x")
	const bound = 5*shardCount + 1 + shardCount + shardCount

	_, err := d.Enqueue(ctx, Event{ID: "evt_0", Type: "t.x"})
	require.NoError(t, err)
	_, err = d.Stats(ctx) // loads the scripts
	require.NoError(t, err)
	counter.take()
	st, err := d.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, st.Due)
	small := counter.take()
	assert.LessOrEqual(t, small, bound)

	for i := 1; i < 200; i++ {
		_, err := d.Enqueue(ctx, Event{ID: fmt.Sprintf("evt_%d", i), Type: "t.x"})
		require.NoError(t, err)
	}
	// A few in flight, so that the lease script runs in their shards.
	jobs, _, _, err := d.leaser.Lease(ctx, 8, worker.ScanFull)
	require.NoError(t, err)
	counter.take()
	st, err = d.Stats(ctx)
	require.NoError(t, err)
	big := counter.take()
	assert.EqualValues(t, 400, st.Due+st.Leased)
	assert.EqualValues(t, len(jobs), st.Leased)
	assert.LessOrEqual(t, big, bound, "commands for 400 deliveries")
	t.Logf("Stats: %d commands for 2 deliveries, %d for 400 (bound %d)", small, big, bound)

	slots.mu.Lock()
	defer slots.mu.Unlock()
	for name, script := range map[string]*redis.Script{"statsQueues": rdb.StatsQueues, "statsLeases": rdb.StatsLeases} {
		calls := slots.calls[script.Hash()]
		require.NotEmpty(t, calls, name)
		for _, keys := range calls {
			for _, k := range keys[1:] {
				require.Equal(t, keySlot(keys[0]), keySlot(k), "script %s: keys %q and %q", name, keys[0], k)
			}
		}
	}
}

// TestStatsCountInlineAttempts: a delivery Dispatch holds for its inline attempt (scheduled in the
// shard's inline zset, not in a queue) counts as leased; once its lease ends with no outcome, as due.
func TestStatsCountInlineAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	rc.setHook(func(*http.Request) {
		arrived <- struct{}{}
		<-release
	})
	mustCreate(t, d, rc, "x")
	done := make(chan error, 1)
	go func() {
		_, err := d.Dispatch(ctx, Event{Type: "x", ID: "held"})
		done <- err
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the inline attempt did not arrive")
	}
	st, err := d.Stats(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 1, st.Leased, "in flight")
	assert.Zero(t, st.Due+st.Scheduled)

	clock.Advance(d.lease + time.Second)
	st, err = d.Stats(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.Leased)
	assert.EqualValues(t, 1, st.Due, "its lease ended without an outcome")
	assert.False(t, st.OldestDueAt.IsZero())
	close(release)
	require.NoError(t, <-done)
}
