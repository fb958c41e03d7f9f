package pgxoutbox_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/pgxoutbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// producer commits events one per transaction, in order, until it has committed n, retrying an event
// whose transaction failed (with the same id: should it have committed after all, the retry is a
// duplicate, delivered once). It returns the ids it committed.
func producer(t testing.TB, pool *pgxpool.Pool, o *pgxoutbox.Outbox, n int, prefix string, onEach func(i int)) []string {
	ctx := context.Background()
	var ids []string
	deadline := time.Now().Add(90 * time.Second)
	for i := 0; i < n; {
		if time.Now().After(deadline) {
			t.Errorf("producer stuck at event %d of %d", i, n)
			return ids
		}
		onEach(i)
		id := fmt.Sprintf("%s-%d", prefix, i)
		err := func() error {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			tx, err := pool.Begin(cctx)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(ctx) }()
			evt := webhooks.Event{Type: "order.paid", ID: id}
			if i%2 == 0 {
				evt.OrderKey, evt.Data = "key", payload{Key: "key", Seq: i / 2}
			}
			if err := o.EnqueueTx(cctx, tx, evt); err != nil {
				return err
			}
			return tx.Commit(cctx)
		}()
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		ids = append(ids, id)
		i++
		time.Sleep(2 * time.Millisecond)
	}
	return ids
}

// TestRelayResumesAfterPostgresRestart: PostgreSQL (a cluster of the test's own) is shut down
// (immediate shutdown, by pid: its sessions end as in a crash) in the middle of relaying, left down
// for a second and started again; the producer retries what failed meanwhile, and the relay, backing
// off while it is down, resumes by itself: every committed event is delivered once, the ordered ones
// in order, and the table drains. Broken by a relay that stops on a PostgreSQL error (the events
// after the restart are never delivered).
func TestRelayResumesAfterPostgresRestart(t *testing.T) {
	pg := startPostgres(t)
	pool := newPool(t, pg.url(), 6)
	table := newTable(t, pool)
	tr := newTestRedis(t)
	d := tr.newDispatcher(t, tr.client(t))
	a := newCounter(t)
	a.subscribe(t, d, "")
	runInBackground(t, "Dispatcher.Run", d.Run)
	o, err := pgxoutbox.New(pool, d, pgxoutbox.Options{Table: table, PollInterval: 50 * time.Millisecond,
		MaxBackoff: 300 * time.Millisecond})
	require.NoError(t, err)
	runInBackground(t, "Outbox.Run", o.Run)

	const n = 300
	ids := producer(t, pool, o, n, "pg", func(i int) {
		if i == n/2 {
			pg.signal(syscall.SIGQUIT) // immediate shutdown
			time.Sleep(time.Second)
			pg.start()
		}
	})
	require.Len(t, ids, n)
	eventually(t, 30*time.Second, func() bool { got, _ := a.distinct(); return got == n }, "every committed event delivered")
	assert.Empty(t, a.repeated(), "each once")
	order := a.keyOrder()["key"]
	for i, s := range order {
		if !assert.Equal(t, i, s, "ordered events in commit order: %v", order) {
			break
		}
	}
	eventually(t, 10*time.Second, func() bool { return tableRows(t, pool, table) == 0 }, "the table drained")
}

// TestRelayResumesAfterRedisRestart: the relay's Redis (a redis-server of the test's own, with an
// append-only file) is SIGKILLed in the middle of relaying, and restarted on the same port once a
// failed relay is recorded (a second at least); the rows wait, with their error, and the relay
// resumes by itself: every committed event is delivered (the ordered ones in order), the table
// drains. Broken by a relay that deletes a row whose Enqueue failed (no failure is ever recorded, and
// the events enqueued while Redis was down are lost).
func TestRelayResumesAfterRedisRestart(t *testing.T) {
	rs := startRedisServer(t)
	pool := newPool(t, pgURL(t), 6)
	table := newTable(t, pool)
	tr := &testRedis{addr: rs.addr(), prefix: "wht_outbox_" + testName(t)}
	rdb := redis.NewClient(&redis.Options{Addr: rs.addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	d := tr.newDispatcher(t, rdb)
	a := newCounter(t)
	a.subscribe(t, d, "")
	runInBackground(t, "Dispatcher.Run", d.Run)
	o, err := pgxoutbox.New(pool, d, pgxoutbox.Options{Table: table, PollInterval: 50 * time.Millisecond,
		MaxBackoff: 300 * time.Millisecond, RelayTimeout: 2 * time.Second})
	require.NoError(t, err)
	runInBackground(t, "Outbox.Run", o.Run)

	const n = 600
	var killedAt time.Time
	var failing *pgxoutbox.Stats
	// restartOnceFailing restarts Redis once it has been down for a second and a failed relay is
	// recorded (a pass's Enqueue calls may wait for Redis up to RelayTimeout first).
	restartOnceFailing := func() bool {
		if failing != nil || killedAt.IsZero() || time.Since(killedAt) < time.Second {
			return failing != nil
		}
		s, err := o.Stats(context.Background())
		require.NoError(t, err)
		if s.Failing > 0 {
			failing = s
			rs.start()
		}
		return failing != nil
	}
	ids := producer(t, pool, o, n, "redis", func(i int) {
		if i == n/3 {
			rs.signal(syscall.SIGKILL)
			killedAt = time.Now()
		}
		restartOnceFailing()
	})
	require.Len(t, ids, n)
	eventually(t, 20*time.Second, restartOnceFailing, "a failed relay recorded while Redis is down")
	eventually(t, 30*time.Second, func() bool { got, _ := a.distinct(); return got == n }, "every committed event delivered")
	order := a.keyOrder()["key"]
	for i, s := range order {
		if !assert.Equal(t, i, s, "ordered events in commit order: %v", order) {
			break
		}
	}
	eventually(t, 10*time.Second, func() bool { return tableRows(t, pool, table) == 0 }, "the table drained")
	assert.Positive(t, failing.Pending, "rows waited while Redis was down")
	assert.Positive(t, failing.Failing, "with their error")
	t.Logf("events received more than once (attempts in flight at the kill): %d", len(a.repeated()))
}
