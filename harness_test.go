package webhooks

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/stretchr/testify/require"
)

// testRedis is the Redis a test runs on: embedded miniredis by default, a real server when
// WEBHOOKS_REDIS_ADDR is set, a Redis Cluster when WEBHOOKS_REDIS_CLUSTER lists its seeds. Each test
// gets its own key prefix, so the suite can share a real Redis.
type testRedis struct {
	rdb    redis.UniversalClient
	prefix string
	mini   *miniredis.Miniredis // nil on a real Redis
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

// newTestClient opens a new client on the test's Redis (for tests that need several clients).
func (tr *testRedis) newClient(t testing.TB) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	switch {
	case tr.mini != nil:
		// miniredis runs its Lua in this process, under -race: on a loaded 2-core machine one script of
		// a big search or drain can take longer than go-redis's default 3 s read timeout.
		c = redis.NewClient(&redis.Options{Addr: tr.mini.Addr(), ReadTimeout: 20 * time.Second, WriteTimeout: 20 * time.Second})
	case os.Getenv("WEBHOOKS_REDIS_CLUSTER") != "":
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(os.Getenv("WEBHOOKS_REDIS_CLUSTER"), ",")})
	default:
		c = redis.NewClient(&redis.Options{Addr: os.Getenv("WEBHOOKS_REDIS_ADDR")})
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newTestRedis(t testing.TB) *testRedis {
	t.Helper()
	name := nonWord.ReplaceAllString(t.Name(), "_")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	tr := &testRedis{prefix: "wht_" + name + "_" + randomHex(3)}
	if onMiniredis() {
		tr.mini = miniredis.RunT(t)
	}
	tr.rdb = tr.newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, tr.rdb.Ping(ctx).Err(), "test Redis must answer")
	if tr.mini == nil {
		t.Cleanup(func() { tr.deleteKeys(t) })
	}
	return tr
}

// onMiniredis reports whether the tests run on miniredis, a server of each test's own (neither
// WEBHOOKS_REDIS_ADDR nor WEBHOOKS_REDIS_CLUSTER set).
func onMiniredis() bool {
	return os.Getenv("WEBHOOKS_REDIS_CLUSTER") == "" && os.Getenv("WEBHOOKS_REDIS_ADDR") == ""
}

// isCluster reports whether the test runs on a Redis Cluster.
func (tr *testRedis) isCluster() bool { _, ok := tr.rdb.(*redis.ClusterClient); return ok }

// deleteKeys removes every key of the test's prefix from a real Redis.
func (tr *testRedis) deleteKeys(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sweep := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, "{"+tr.prefix+":*", 500).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		return iter.Err()
	}
	var err error
	switch c := tr.rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, sweep)
	case *redis.Client:
		err = sweep(ctx, c)
	}
	if err != nil {
		t.Logf("cleanup of %s: %v", tr.prefix, err)
	}
}

// pttls reads the time to live of keys of one slot in one MULTI/EXEC, so that they are read at one
// moment: read one after another, on a real Redis the later reads are lower by the time between them,
// which a loaded machine stretches past any tolerance that still tells two expiries apart.
func (tr *testRedis) pttls(t testing.TB, keys ...string) []time.Duration {
	t.Helper()
	ctx := context.Background()
	cmds := make([]*redis.DurationCmd, len(keys))
	_, err := tr.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.PTTL(ctx, k)
		}
		return nil
	})
	require.NoError(t, err)
	out := make([]time.Duration, len(keys))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out
}

// keys lists the test's keys (all nodes of a cluster).
func (tr *testRedis) keys(t testing.TB) []string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var out []string
	collect := func(ctx context.Context, c *redis.Client) error {
		ks, err := c.Keys(ctx, "{"+tr.prefix+":*").Result()
		mu.Lock()
		out = append(out, ks...)
		mu.Unlock()
		return err
	}
	switch c := tr.rdb.(type) {
	case *redis.ClusterClient:
		require.NoError(t, c.ForEachMaster(ctx, collect))
	case *redis.Client:
		require.NoError(t, collect(ctx, c))
	}
	return out
}

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: time.Now()} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newTestDispatcher makes a dispatcher on the test's Redis with its key prefix, the egress guard off
// (receivers listen on loopback) and a short timeout.
func newTestDispatcher(t testing.TB, tr *testRedis, opts Options) *Dispatcher {
	t.Helper()
	return newTestDispatcherOn(t, tr.rdb, tr, opts)
}

// newClockedDispatcher is newTestDispatcher on a clock the test moves.
func newClockedDispatcher(t testing.TB, tr *testRedis, opts Options) (*Dispatcher, *testClock) {
	t.Helper()
	clock := newTestClock()
	d := newTestDispatcher(t, tr, opts)
	d.now = clock.Now
	return d, clock
}

func newTestDispatcherOn(t testing.TB, client redis.UniversalClient, tr *testRedis, opts Options) *Dispatcher {
	t.Helper()
	opts.KeyPrefix = tr.prefix
	opts.AllowPrivateNetworks = true
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.BreakAfter == 0 {
		// The v1 tests count every attempt to a failing receiver; the breaker's own tests
		// (circuit_count_test.go, engine_test.go) set BreakAfter.
		opts.BreakAfter = -1
	}
	// The shard count is read on the test's own client: client may be one the test breaks.
	d, err := New(tr.rdb, opts)
	require.NoError(t, err)
	require.NoError(t, loadKeys(context.Background(), d.keys, tr.rdb), "the shard count, read as the first call that needs it would")
	if client != tr.rdb {
		useClient(d, client)
	}
	return d
}

// receiver is a webhook endpoint on loopback that records what it gets.
type receiver struct {
	srv    *httptest.Server
	status atomic.Int32 // the status it answers with; 200 when 0
	mu     sync.Mutex
	reqs   []capturedRequest
	// hook, when set, runs before the answer (to hold or fail a request).
	hook atomic.Pointer[func(r *http.Request)]
}

func newReceiver(t testing.TB) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, capturedRequest{Header: r.Header.Clone(), Body: body})
		rc.mu.Unlock()
		if h := rc.hook.Load(); h != nil {
			(*h)(r)
		}
		code := int(rc.status.Load())
		if code == 0 {
			code = http.StatusOK
		}
		w.WriteHeader(code)
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) setHook(f func(r *http.Request)) { rc.hook.Store(&f) }

func (rc *receiver) requests() []capturedRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]capturedRequest(nil), rc.reqs...)
}

func (rc *receiver) count() int { return len(rc.requests()) }

// perDelivery counts requests by webhook-id header (the delivery id).
func (rc *receiver) perDelivery() map[string]int {
	out := map[string]int{}
	for _, r := range rc.requests() {
		out[r.Header.Get("webhook-id")]++
	}
	return out
}

// mustCreate registers a webhook on the receiver.
func mustCreate(t testing.TB, d *Dispatcher, rc *receiver, events ...string) *Webhook {
	t.Helper()
	w, err := d.Webhooks().Create(context.Background(), Webhook{URL: rc.srv.URL, Events: events})
	require.NoError(t, err)
	return w
}

// eventually polls cond every 10ms until it holds or the bound passes.
func eventually(t testing.TB, within time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitProgress waits until count() reaches want, or done() holds (nil: never), polling every poll. It
// gives up only once count() has not grown for progressStall: a wait bounded by progress, not by wall
// time, so a loaded machine's slowness is not taken for a stall.
func waitProgress(want int, count func() int, done func() bool, poll time.Duration) {
	last, lastAt := count(), time.Now()
	for n := last; n < want && (done == nil || !done()); n = count() {
		if n > last {
			last, lastAt = n, time.Now()
		} else if time.Since(lastAt) > progressStall {
			break
		}
		time.Sleep(poll)
	}
}

// progressStall is how long waitProgress waits with no progress.
const progressStall = 30 * time.Second

// passHook is a go-redis hook that passes everything through; test hooks embed it and override what
// they watch.
type passHook struct{}

func (passHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (passHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (passHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// stealLease rewrites a record's head as if another worker had leased it.
func stealLease(t testing.TB, client redis.UniversalClient, key string) {
	t.Helper()
	ctx := context.Background()
	raw, err := client.Get(ctx, key).Result()
	require.NoError(t, err)
	require.NoError(t, client.Set(ctx, key, strings.Repeat("f", rdb.TokenLen)+string(rdb.LeaseHeld)+raw[rdb.TokenLen+1:], redis.KeepTTL).Err())
}

// eventIDsInShard returns n event ids "<prefix>-<i>" that all fall in shard.
func eventIDsInShard(t testing.TB, prefix string, shard, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; len(ids) < n && i < 1000*n; i++ {
		if id := fmt.Sprintf("%s-%d", prefix, i); shardOf(id) == shard {
			ids = append(ids, id)
		}
	}
	require.Len(t, ids, n)
	return ids
}
