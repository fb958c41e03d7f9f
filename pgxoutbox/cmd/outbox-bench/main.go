// Command outbox-bench measures the transactional outbox end to end on this machine: producers commit
// events (one per transaction, EnqueueTx) at a target rate into PostgreSQL, relays (Outbox.Run, each
// with its own pool and Dispatcher) move them to Redis, and a worker (Dispatcher.Run) delivers them
// to a loopback receiver. It reports the commits per second achieved, the events relayed per second,
// the relay lag (from just before the producer's COMMIT to the end of the relay's accepted Enqueue)
// and the delivery lag (to the receiver's first request) at p50/p99/max, what is left behind when the
// producers stop and how long it takes to drain, and PostgreSQL's and Redis's work per event.
//
// PostgreSQL is -pg (default WEBHOOKS_PG_URL); its figures are the database's pg_stat_database
// counters and the cluster's WAL position, so other activity on the same server is counted too.
// Redis is a redis-server of its own on a spare loopback port (no persistence; stopped by pid at the
// end) unless -redis names one; its figures are INFO commandstats. The table is created (Migrate) and
// dropped; Redis keys are under a prefix of their own.
//
//	go run ./cmd/outbox-bench -rate 5000 -duration 20s
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/pgxoutbox"
)

type config struct {
	pg, redis                    string
	rate, producers, relays      int
	duration, drainLimit, notify time.Duration
	batch, concurrency, webhooks int
	enqueueConcurrency           int
	privateDB                    bool
	ordered                      float64
	deliver                      bool
}

func main() {
	var c config
	flag.StringVar(&c.pg, "pg", os.Getenv("WEBHOOKS_PG_URL"), "PostgreSQL URL")
	flag.StringVar(&c.redis, "redis", "", "Redis address (default: a redis-server of its own on a spare port)")
	flag.IntVar(&c.rate, "rate", 5000, "target commits per second, all producers together")
	flag.IntVar(&c.producers, "producers", 32, "producer goroutines (each its own transaction at a time)")
	flag.IntVar(&c.relays, "replicas", 3, "replicas: each a Dispatcher running Run and an Outbox running Run, on a pool of its own (0: the producers alone)")
	flag.DurationVar(&c.duration, "duration", 20*time.Second, "how long the producers commit")
	flag.DurationVar(&c.drainLimit, "drain-limit", time.Minute, "how long to wait for the backlog to drain")
	flag.DurationVar(&c.notify, "notify-interval", 0, "Options.NotifyInterval (0: the default; -1ns: never)")
	flag.IntVar(&c.batch, "batch", 0, "Options.BatchSize (0: the default)")
	flag.IntVar(&c.concurrency, "concurrency", 0, "Options.Concurrency per relay (0: the default)")
	flag.IntVar(&c.enqueueConcurrency, "enqueue-concurrency", 0, "Options.EnqueueConcurrency (0: the default)")
	flag.BoolVar(&c.privateDB, "private-db", true, "run in a database of its own (created and dropped), so that its counters are the benchmark's alone")
	flag.IntVar(&c.webhooks, "webhooks", 1, "webhooks subscribed to every event")
	flag.Float64Var(&c.ordered, "ordered", 0, "share of events with an order key (one of 1,000 keys)")
	flag.BoolVar(&c.deliver, "deliver", true, "run the workers (Dispatcher.Run) that deliver; false: the relays alone (deliveries stay queued)")
	flag.Parse()
	if c.pg == "" {
		log.Fatal("outbox-bench: set -pg or WEBHOOKS_PG_URL")
	}
	if err := run(c); err != nil {
		log.Fatal("outbox-bench: ", err)
	}
}

func run(c config) error {
	ctx := context.Background()
	if c.redis == "" {
		addr, stop, err := startRedis()
		if err != nil {
			return err
		}
		defer stop()
		c.redis = addr
	}
	rdb := redis.NewClient(&redis.Options{Addr: c.redis, PoolSize: 64})
	defer rdb.Close()
	prefix := "outbox_bench_" + strconv.Itoa(rand.IntN(1e6))
	defer deleteKeys(rdb, prefix)
	dopts := webhooks.Options{KeyPrefix: prefix, AllowPrivateNetworks: true, Timeout: 5 * time.Second, BreakAfter: -1}

	if c.privateDB {
		url, drop, err := privateDatabase(ctx, c.pg)
		if err != nil {
			return err
		}
		defer drop()
		c.pg = url
	}
	pool, err := newPool(ctx, c.pg, int32(c.producers+4))
	if err != nil {
		return err
	}
	defer pool.Close()
	table := "outbox_bench_" + strconv.Itoa(rand.IntN(1e6))
	if err := pgxoutbox.Migrate(ctx, pool, table); err != nil {
		return err
	}
	defer dropTable(c.pg, table) // on a connection of its own: the pools are closed before the end

	// The receiver, and the worker that delivers to it.
	lags := &lagLog{}
	var received atomic.Int64
	commits := &commitTimes{at: map[string]time.Time{}}
	seen := sync.Map{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if _, dup := seen.LoadOrStore(r.Header.Get("webhook-id"), true); !dup {
			received.Add(1)
			var evt struct{ ID string }
			_ = json.Unmarshal(body, &evt)
			if at, ok := commits.get(evt.ID); ok {
				lags.deliver(time.Since(at))
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	// The replicas: each a Dispatcher running its worker and an Outbox's relay, as a service's
	// replicas would; the Dispatcher's Tracer records when a relay's Enqueue was accepted.
	var relayed atomic.Int64
	opts := pgxoutbox.Options{Table: table, BatchSize: c.batch, Concurrency: c.concurrency, NotifyInterval: c.notify,
		EnqueueConcurrency: c.enqueueConcurrency}
	runCtx, stopRuns := context.WithCancel(ctx)
	var runs sync.WaitGroup
	defer func() { stopRuns(); runs.Wait() }()
	var first *webhooks.Dispatcher
	var pools []*pgxpool.Pool
	for i := range c.relays {
		ropts := dopts
		ropts.Tracer = relayTracer{commits: commits, lags: lags, relayed: &relayed}
		d, err := webhooks.New(rdb, ropts)
		if err != nil {
			return err
		}
		if i == 0 {
			first = d
			for range c.webhooks {
				if _, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: srv.URL, Events: []string{"*"}}); err != nil {
					return err
				}
			}
		}
		rpool, err := newPool(ctx, c.pg, 8)
		if err != nil {
			return err
		}
		defer rpool.Close()
		pools = append(pools, rpool)
		o, err := pgxoutbox.New(rpool, d, opts)
		if err != nil {
			return err
		}
		if c.deliver {
			runs.Go(func() { _ = d.Run(runCtx) })
		}
		runs.Go(func() {
			if err := o.Run(runCtx); err != nil {
				log.Print("relay: ", err)
			}
		})
	}
	if first == nil { // -replicas 0: the producers alone, for the commit rate PostgreSQL allows
		if first, err = webhooks.New(rdb, dopts); err != nil {
			return err
		}
	}
	producer, err := pgxoutbox.New(pool, first, opts)
	if err != nil {
		return err
	}

	time.Sleep(500 * time.Millisecond) // the relays listen
	pgBefore, err := readPG(ctx, pool)
	if err != nil {
		return err
	}
	redisBefore, err := readRedis(ctx, rdb)
	if err != nil {
		return err
	}

	// Producers: each commits at its share of the rate, one event per transaction.
	var committed, failedCommits atomic.Int64
	start := time.Now()
	deadline := start.Add(c.duration)
	var prod sync.WaitGroup
	interval := time.Duration(float64(time.Second) * float64(c.producers) / float64(c.rate))
	for p := range c.producers {
		prod.Go(func() {
			next := start.Add(time.Duration(rand.Int64N(int64(interval))))
			for n := 0; ; n++ {
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				}
				if time.Now().After(deadline) {
					return
				}
				next = next.Add(interval)
				id := fmt.Sprintf("b%d-%d", p, n)
				evt := webhooks.Event{Type: "bench.event", ID: id, Data: map[string]any{"n": n, "producer": p}}
				if rand.Float64() < c.ordered {
					evt.OrderKey = "key-" + strconv.Itoa(rand.IntN(1000))
				}
				if err := commitOne(ctx, pool, producer, evt, commits); err != nil {
					failedCommits.Add(1)
					continue
				}
				committed.Add(1)
			}
		})
	}
	prod.Wait()
	produced := time.Since(start)
	backlog := committed.Load() - relayed.Load()
	drainStart := time.Now()
	for c.relays > 0 && relayed.Load() < committed.Load() && time.Since(drainStart) < c.drainLimit {
		time.Sleep(5 * time.Millisecond)
	}
	drained := time.Since(drainStart)
	total := time.Since(start)
	want := committed.Load() * int64(c.webhooks)
	for c.deliver && c.relays > 0 && received.Load() < want && time.Since(drainStart) < c.drainLimit {
		time.Sleep(5 * time.Millisecond)
	}
	redisAfter, err := readRedis(ctx, rdb)
	if err != nil {
		return err
	}
	// PostgreSQL's backends report their counters when they end (or a while after they go idle):
	// end them all, and read the counters on a connection of its own.
	stopRuns()
	runs.Wait()
	pool.Close()
	for _, p := range pools {
		p.Close()
	}
	time.Sleep(1500 * time.Millisecond)
	statsPool, err := newPool(ctx, c.pg, 1)
	if err != nil {
		return err
	}
	defer statsPool.Close()
	pgAfter, err := readPG(ctx, statsPool)
	if err != nil {
		return err
	}

	n := float64(committed.Load())
	fmt.Printf("outbox-bench: %d producers at %d commits/s for %s, %d replicas (relay: %s), %d webhook(s), %.0f%% ordered, delivering: %v\n",
		c.producers, c.rate, c.duration, c.relays, optsSummary(opts), c.webhooks, 100*c.ordered, c.deliver)
	fmt.Printf("committed      %d events in %s: %.0f commits/s (%d commits failed)\n", committed.Load(),
		produced.Round(time.Millisecond), n/produced.Seconds(), failedCommits.Load())
	fmt.Printf("relayed        %d events: %.0f events/s over the run and its drain (%s)\n", relayed.Load(),
		float64(relayed.Load())/total.Seconds(), total.Round(time.Millisecond))
	fmt.Printf("backlog        %d rows when the producers stopped, relayed within %s\n", backlog, drained.Round(time.Millisecond))
	fmt.Printf("relay lag      %s (commit -> accepted by Enqueue)\n", lags.relaySummary())
	fmt.Printf("delivery lag   %s (commit -> first request at the receiver; %d of %d received)\n", lags.deliverySummary(),
		received.Load(), want)
	fmt.Printf("postgres/event %s (WAL: the whole server's)\n", pgAfter.sub(pgBefore).per(n))
	fmt.Printf("redis/event    %s\n", redisAfter.sub(redisBefore).per(n))
	return nil
}

func optsSummary(o pgxoutbox.Options) string {
	return fmt.Sprintf("batch %d, concurrency %d, notify %s", or(o.BatchSize, pgxoutbox.DefaultBatchSize),
		or(o.Concurrency, pgxoutbox.DefaultConcurrency), orDur(o.NotifyInterval, pgxoutbox.DefaultNotifyInterval))
}

func or(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func orDur(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

// commitOne commits one event in a transaction of its own, noting when its COMMIT was sent.
func commitOne(ctx context.Context, pool *pgxpool.Pool, o *pgxoutbox.Outbox, evt webhooks.Event, commits *commitTimes) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := o.EnqueueTx(ctx, tx, evt); err != nil {
		return err
	}
	commits.set(evt.ID, time.Now())
	return tx.Commit(ctx)
}

// privateDatabase creates a database of its own on the server of url and returns its URL and a
// function that drops it.
func privateDatabase(ctx context.Context, url string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(ctx)
	name := "outbox_bench_" + strconv.Itoa(rand.IntN(1e6))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create a database of its own (-private-db=false to run in -pg's): %w", err)
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "", nil, err
	}
	cfg.Database = name
	drop := func() {
		c, err := pgx.ConnectConfig(context.Background(), mustParse(url))
		if err != nil {
			log.Print("drop the database: ", err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			log.Print("drop the database: ", err)
		}
	}
	u := strings.Replace(url, "/"+mustParse(url).Database, "/"+name, 1)
	return u, drop, nil
}

// dropTable drops the benchmark's table, on a connection of its own.
func dropTable(url, table string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err == nil {
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "DROP TABLE IF EXISTS "+table)
	}
	if err != nil {
		log.Print("drop the table: ", err)
	}
}

func mustParse(url string) *pgx.ConnConfig {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		log.Fatal(err)
	}
	return cfg
}

func newPool(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	return pgxpool.NewWithConfig(ctx, cfg)
}

// commitTimes are the times just before each event's COMMIT.
type commitTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (c *commitTimes) set(id string, t time.Time) { c.mu.Lock(); c.at[id] = t; c.mu.Unlock() }

func (c *commitTimes) get(id string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.at[id]
	return t, ok
}

// relayTracer records, for each Enqueue of a relay that is accepted and not a duplicate, the lag
// since its event's commit.
type relayTracer struct {
	commits *commitTimes
	lags    *lagLog
	relayed *atomic.Int64
}

func (relayTracer) Traceparent(context.Context) string { return "" }

func (rt relayTracer) StartCall(ctx context.Context, call webhooks.CallInfo) (context.Context, func(webhooks.CallEnd)) {
	return ctx, func(end webhooks.CallEnd) {
		if end.Err != nil || call.Operation != "Enqueue" {
			return
		}
		for _, r := range end.Results {
			if r.Duplicate {
				return
			}
		}
		rt.relayed.Add(1)
		if at, ok := rt.commits.get(call.EventID); ok {
			rt.lags.relay(time.Since(at))
		}
	}
}

func (relayTracer) StartAttempt(ctx context.Context, _ string, _ webhooks.AttemptStart) (context.Context, func(webhooks.AttemptEnd)) {
	return ctx, nil
}

// lagLog keeps every lag measured.
type lagLog struct {
	mu                 sync.Mutex
	relays, deliveries []time.Duration
}

func (l *lagLog) relay(d time.Duration) { l.mu.Lock(); l.relays = append(l.relays, d); l.mu.Unlock() }
func (l *lagLog) deliver(d time.Duration) {
	l.mu.Lock()
	l.deliveries = append(l.deliveries, d)
	l.mu.Unlock()
}

func (l *lagLog) relaySummary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return percentiles(l.relays)
}

func (l *lagLog) deliverySummary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return percentiles(l.deliveries)
}

func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none measured"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) time.Duration {
		return s[min(len(s)-1, int(p*float64(len(s))))].Round(100 * time.Microsecond)
	}
	return fmt.Sprintf("p50 %s, p99 %s, max %s", at(0.50), at(0.99), s[len(s)-1].Round(100*time.Microsecond))
}

// pgStats are counters of the database (pg_stat_database) and the cluster's WAL position.
type pgStats struct{ commits, inserted, deleted, updated, blocks, wal float64 }

func readPG(ctx context.Context, pool *pgxpool.Pool) (pgStats, error) {
	var s pgStats
	err := pool.QueryRow(ctx, "SELECT xact_commit, tup_inserted, tup_deleted, tup_updated, blks_hit + blks_read,"+
		" pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') FROM pg_stat_database WHERE datname = current_database()").
		Scan(&s.commits, &s.inserted, &s.deleted, &s.updated, &s.blocks, &s.wal)
	return s, err
}

func (a pgStats) sub(b pgStats) pgStats {
	return pgStats{a.commits - b.commits, a.inserted - b.inserted, a.deleted - b.deleted, a.updated - b.updated,
		a.blocks - b.blocks, a.wal - b.wal}
}

func (a pgStats) per(n float64) string {
	return fmt.Sprintf("%.2f commits (producer's included), %.2f rows inserted, %.2f deleted, %.2f updated, %.1f buffer reads, %.0f WAL bytes",
		a.commits/n, a.inserted/n, a.deleted/n, a.updated/n, a.blocks/n, a.wal/n)
}

// redisStats are INFO commandstats: calls and microseconds, all commands together.
type redisStats struct{ calls, usec float64 }

func readRedis(ctx context.Context, rdb *redis.Client) (redisStats, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return redisStats{}, err
	}
	var s redisStats
	for _, line := range strings.Split(info, "\n") {
		_, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				s.calls += f
			case "usec":
				s.usec += f
			}
		}
	}
	return s, nil
}

func (a redisStats) sub(b redisStats) redisStats {
	return redisStats{a.calls - b.calls, a.usec - b.usec}
}

func (a redisStats) per(n float64) string {
	return fmt.Sprintf("%.1f commands, %.0f µs of command time (relay and delivery together)", a.calls/n, a.usec/n)
}

// startRedis runs a redis-server on a spare loopback port and returns its address and a function
// that stops it (by pid).
func startRedis() (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir, err := os.MkdirTemp("", "outbox-bench-redis-")
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--daemonize", "no")
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start redis-server: %w", err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = os.RemoveAll(dir) }
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for i := 0; i < 100; i++ {
		if c.Ping(context.Background()).Err() == nil {
			return addr, stop, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	return "", nil, fmt.Errorf("redis-server on port %d did not answer", port)
}

func deleteKeys(rdb *redis.Client, prefix string) {
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, "{"+prefix+":*", 1000).Iterator()
	for iter.Next(ctx) {
		rdb.Del(ctx, iter.Val())
	}
}
