package pgxoutbox_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/internal/testmain"
	"github.com/smartdrop/webhooks/pgxoutbox"
)

// relayChildEnv, set to "1", makes the test binary a relay process for the crash test instead of
// running the tests: see runRelayChild.
const relayChildEnv = "PGXOUTBOX_TEST_RELAY_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(relayChildEnv) == "1" {
		if err := runRelayChild(); err != nil {
			fmt.Fprintln(os.Stderr, "relay child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	testmain.Run(m)
}

// runRelayChild is a relay process: an Outbox's Run on the table, PostgreSQL and Redis its
// environment names (PGXOUTBOX_CHILD_PG, _TABLE, _REDIS, _PREFIX), through a Dispatcher that runs no
// worker, each Redis command delayed by PGXOUTBOX_CHILD_DELAY (so a pass takes a while and a kill
// lands in one). It logs each pass as JSON on stdout (the test adds up the duplicates), and runs
// until it is killed, or stopped with SIGTERM.
func runRelayChild() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg, err := pgxpool.ParseConfig(os.Getenv("PGXOUTBOX_CHILD_PG"))
	if err != nil {
		return err
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	rdb := newRedisClient(os.Getenv("PGXOUTBOX_CHILD_REDIS"), 0)
	defer rdb.Close()
	if delay, _ := time.ParseDuration(os.Getenv("PGXOUTBOX_CHILD_DELAY")); delay > 0 {
		rdb.AddHook(slowRedis(delay))
	}
	tr := &testRedis{prefix: os.Getenv("PGXOUTBOX_CHILD_PREFIX")}
	d, err := webhooks.New(rdb, tr.dispatcherOptions())
	if err != nil {
		return err
	}
	batch, _ := strconv.Atoi(os.Getenv("PGXOUTBOX_CHILD_BATCH"))
	o, err := pgxoutbox.New(pool, d, pgxoutbox.Options{Table: os.Getenv("PGXOUTBOX_CHILD_TABLE"), BatchSize: batch,
		Concurrency: 2, EnqueueConcurrency: 8, PollInterval: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		return err
	}
	return o.Run(ctx)
}

// slowRedis is a go-redis hook that delays every command and pipeline by d.
type slowRedis time.Duration

func (s slowRedis) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s slowRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		time.Sleep(time.Duration(s))
		return next(ctx, cmd)
	}
}

func (s slowRedis) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		time.Sleep(time.Duration(s))
		return next(ctx, cmds)
	}
}
