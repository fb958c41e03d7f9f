package pgxoutbox_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/pgxoutbox"
	"github.com/stretchr/testify/require"
)

// pgURL is the PostgreSQL the tests run on (WEBHOOKS_PG_URL). Without it a test skips, except in CI
// (CI set), where it fails: CI must run them.
func pgURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("WEBHOOKS_PG_URL")
	if u == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("WEBHOOKS_PG_URL is not set in CI: the outbox tests need PostgreSQL")
		}
		t.Skip("needs PostgreSQL: set WEBHOOKS_PG_URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return u
}

// newPool opens a pool on url with at most maxConns connections, closed at the test's end.
func newPool(t testing.TB, url string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// testName is t's name as a lowercase identifier fragment, with a random suffix.
func testName(t testing.TB) string {
	name := nonWord.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 24 {
		name = name[len(name)-24:]
	}
	return strings.Trim(name, "_") + "_" + randomHex(3)
}

// newTable creates an outbox table of the test's own on pool (Migrate), dropped at the test's end.
func newTable(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	table := "wht_" + testName(t)
	require.NoError(t, pgxoutbox.Migrate(context.Background(), pool, table))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
			t.Logf("drop %s: %v", table, err)
		}
	})
	return table
}

// testRedis is the Redis a test runs on: the Redis Cluster WEBHOOKS_REDIS_CLUSTER names (its nodes,
// comma-separated) when set, else WEBHOOKS_REDIS_ADDR when set, else an embedded miniredis (which
// helper processes reach over TCP too). Each test has its own key prefix; on a real Redis its keys are
// deleted at the end.
type testRedis struct {
	addr   string // one address, or a cluster's nodes separated by commas (newRedisClient)
	prefix string
}

func newTestRedis(t testing.TB) *testRedis {
	t.Helper()
	tr := &testRedis{addr: os.Getenv("WEBHOOKS_REDIS_CLUSTER"), prefix: "wht_outbox_" + testName(t)}
	if tr.addr == "" {
		tr.addr = os.Getenv("WEBHOOKS_REDIS_ADDR")
	}
	if tr.addr == "" {
		tr.addr = miniredis.RunT(t).Addr()
		return tr
	}
	t.Cleanup(func() { deleteKeys(t, tr.addr, tr.prefix) })
	return tr
}

// newRedisClient is a client of addr: a cluster client when addr names several nodes (comma-separated),
// else a client of the one server; maxRetries as redis.Options.MaxRetries (0: the default).
func newRedisClient(addr string, maxRetries int) redis.UniversalClient {
	if nodes := strings.Split(addr, ","); len(nodes) > 1 {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: nodes, MaxRetries: maxRetries})
	}
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: maxRetries})
}

// deleteKeys removes every key of prefix from the Redis at addr (every master of a cluster).
func deleteKeys(t testing.TB, addr, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := newRedisClient(addr, 0)
	defer c.Close()
	del := func(ctx context.Context, node *redis.Client) error {
		iter := node.Scan(ctx, 0, "{"+prefix+":*", 500).Iterator()
		for iter.Next(ctx) {
			node.Del(ctx, iter.Val())
		}
		return iter.Err()
	}
	var err error
	switch c := c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, del)
	case *redis.Client:
		err = del(ctx, c)
	}
	if err != nil {
		t.Logf("cleanup of %s: %v", prefix, err)
	}
}

// client opens a Redis client on the test's Redis, closed at the test's end.
func (tr *testRedis) client(t testing.TB) redis.UniversalClient {
	c := newRedisClient(tr.addr, 0)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// dispatcherOptions are the options of every Dispatcher of a test: its key prefix, loopback
// receivers allowed, few shards (so a worker finds what another process enqueued within a poll or
// two), the breaker off.
func (tr *testRedis) dispatcherOptions() webhooks.Options {
	return webhooks.Options{KeyPrefix: tr.prefix, AllowPrivateNetworks: true, Timeout: 5 * time.Second,
		Shards: 4, BreakAfter: -1}
}

// newDispatcher makes a Dispatcher on rdb with the test's options.
func (tr *testRedis) newDispatcher(t testing.TB, rdb redis.UniversalClient) *webhooks.Dispatcher {
	t.Helper()
	d, err := webhooks.New(rdb, tr.dispatcherOptions())
	require.NoError(t, err)
	t.Cleanup(d.CloseIdleConnections)
	return d
}

// runInBackground runs run until the test ends, and fails the test if it returns an error.
func runInBackground(t testing.TB, what string, run func(ctx context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s returned %v", what, err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("%s did not return within 30s of its context's end", what)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// eventually fails t unless cond holds within d (checked every 20ms).
func eventually(t testing.TB, d time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: "+msg, append([]any{d}, args...)...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// payload is the data of the tests' events: which key and which of its events.
type payload struct {
	Key string `json:"key"`
	Seq int    `json:"seq"`
}

// counter is a webhook endpoint that counts the requests of each event id and keeps, per key of the
// payload, the order in which the events arrived. It answers 200.
type counter struct {
	srv    *httptest.Server
	mu     sync.Mutex
	counts map[string]int
	order  map[string][]int
	bodies map[string][]byte
	total  int
}

func newCounter(t testing.TB) *counter {
	c := &counter{counts: map[string]int{}, order: map[string][]int{}, bodies: map[string][]byte{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var evt struct {
			ID   string  `json:"id"`
			Data payload `json:"data"`
		}
		_ = json.Unmarshal(body, &evt)
		c.mu.Lock()
		c.counts[evt.ID]++
		c.total++
		if c.counts[evt.ID] == 1 {
			c.bodies[evt.ID] = body
			if evt.Data.Key != "" {
				c.order[evt.Data.Key] = append(c.order[evt.Data.Key], evt.Data.Seq)
			}
		}
		c.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// distinct is the number of distinct event ids received, and total the number of requests.
func (c *counter) distinct() (distinct, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.counts), c.total
}

// count is the number of requests of one event id.
func (c *counter) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[id]
}

// body is the first request body of one event id.
func (c *counter) body(id string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bodies[id]
}

// repeated lists the event ids received more than once.
func (c *counter) repeated() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for id, n := range c.counts {
		if n > 1 {
			out = append(out, id)
		}
	}
	return out
}

// keyOrder is, per key, the sequence numbers in the order they arrived.
func (c *counter) keyOrder() map[string][]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string][]int, len(c.order))
	for k, v := range c.order {
		out[k] = append([]int(nil), v...)
	}
	return out
}

// subscribe creates a webhook for every event type on d (with tenant), delivering to c.
func (c *counter) subscribe(t testing.TB, d *webhooks.Dispatcher, tenant string) *webhooks.Webhook {
	t.Helper()
	w, err := d.Webhooks().Create(context.Background(), webhooks.Webhook{URL: c.srv.URL, Events: []string{"*"}, Tenant: tenant})
	require.NoError(t, err)
	return w
}

// tableRows is the number of rows in table.
func tableRows(t testing.TB, pool *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

// fixture is one test's outbox: a table, a Dispatcher (whose worker runs) with two webhooks, each
// delivering to its own counter, and an Outbox on them whose relay the test starts.
type fixture struct {
	pool  *pgxpool.Pool
	table string
	tr    *testRedis
	d     *webhooks.Dispatcher
	o     *pgxoutbox.Outbox
	a, b  *counter
}

func newFixture(t testing.TB, opts pgxoutbox.Options) *fixture {
	t.Helper()
	f := &fixture{pool: newPool(t, pgURL(t), 8), tr: newTestRedis(t)}
	f.table = newTable(t, f.pool)
	f.d = f.tr.newDispatcher(t, f.tr.client(t))
	f.a, f.b = newCounter(t), newCounter(t)
	f.a.subscribe(t, f.d, "")
	f.b.subscribe(t, f.d, "")
	runInBackground(t, "Dispatcher.Run", f.d.Run)
	opts.Table = f.table
	if opts.PollInterval == 0 {
		opts.PollInterval = 50 * time.Millisecond
	}
	o, err := pgxoutbox.New(f.pool, f.d, opts)
	require.NoError(t, err)
	f.o = o
	return f
}

// relay starts the Outbox's relay until the test ends (or stop).
func (f *fixture) relay(t testing.TB) (stop func()) { return runInBackground(t, "Outbox.Run", f.o.Run) }

// commit enqueues evts in one transaction and commits it.
func (f *fixture) commit(t testing.TB, evts ...webhooks.Event) {
	t.Helper()
	ctx := context.Background()
	tx, err := f.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	for _, evt := range evts {
		require.NoError(t, f.o.EnqueueTx(ctx, tx, evt))
	}
	require.NoError(t, tx.Commit(ctx))
}

// delivered waits until both webhooks received each id, and checks that each received it once.
func (f *fixture) delivered(t testing.TB, within time.Duration, ids ...string) {
	t.Helper()
	for _, c := range []*counter{f.a, f.b} {
		eventually(t, within, func() bool {
			for _, id := range ids {
				if c.count(id) == 0 {
					return false
				}
			}
			return true
		}, "every event delivered to both webhooks")
		for _, id := range ids {
			require.Equal(t, 1, c.count(id), "event %s delivered once", id)
		}
	}
}

// drained waits until the table is empty.
func (f *fixture) drained(t testing.TB, within time.Duration) {
	t.Helper()
	eventually(t, within, func() bool { return tableRows(t, f.pool, f.table) == 0 }, "the outbox table drained")
}

// newOutbox makes an Outbox on table, polling every 50ms.
func newOutbox(t testing.TB, pool *pgxpool.Pool, d *webhooks.Dispatcher, table string) *pgxoutbox.Outbox {
	t.Helper()
	o, err := pgxoutbox.New(pool, d, pgxoutbox.Options{Table: table, PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	return o
}

// brokenRedis is a go-redis hook that fails every command while it is set, as a Redis that is down.
type brokenRedis struct {
	mu   sync.Mutex
	down bool
}

func (b *brokenRedis) set(down bool) { b.mu.Lock(); b.down = down; b.mu.Unlock() }

func (b *brokenRedis) isDown() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.down }

var errRedisDown = errors.New("redis down (test)")

func (b *brokenRedis) DialHook(next redis.DialHook) redis.DialHook { return next }

func (b *brokenRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if b.isDown() {
			cmd.SetErr(errRedisDown)
			return errRedisDown
		}
		return next(ctx, cmd)
	}
}

func (b *brokenRedis) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if b.isDown() {
			for _, c := range cmds {
				c.SetErr(errRedisDown)
			}
			return errRedisDown
		}
		return next(ctx, cmds)
	}
}

// begin begins a transaction on pool, rolled back at the test's end unless it was committed.
func begin(t testing.TB, ctx context.Context, pool *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}
