package webhooks

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewDoesNoIO (DESIGN guarantee 4): a Dispatcher made against a port where no Redis listens is
// made at once, with no error and no log line; its Dispatch fails with ErrNotAccepted; once a Redis
// listens on that port, the same Dispatcher reads the shard count and delivers.
func TestNewDoesNoIO(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = client.Close() })
	dials := &dialCounter{}
	client.AddHook(dials)
	var logs bytes.Buffer
	d, err := New(client, Options{KeyPrefix: "wht_nonio_" + randomHex(3), AllowPrivateNetworks: true, Timeout: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err, "New fails for no Redis reason")
	assert.Zero(t, dials.n.Load(), "New dials no connection")
	assert.Empty(t, logs.String(), "New logs nothing")

	ctx := context.Background()
	_, err = d.Dispatch(ctx, Event{Type: "x", ID: "e1"})
	require.ErrorIs(t, err, ErrNotAccepted, "Redis is down: nothing accepted")
	assert.Positive(t, dials.n.Load(), "Dispatch dials (the counter sees dials)")

	m := miniredis.NewMiniRedis()
	require.NoError(t, m.StartAddr(addr), "a Redis on the closed port")
	t.Cleanup(m.Close)
	rc := newReceiver(t)
	mustCreate(t, d, rc, "x")
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "e1"})
	require.NoError(t, err, "the same Dispatcher works once Redis answers")
	require.Len(t, res, 1)
	assert.Equal(t, StatusSuccess, res[0].Delivery.Status)
	assert.Equal(t, 1, rc.count())
	v, err := client.Get(ctx, d.keys.ShardCount()).Result()
	require.NoError(t, err)
	assert.Equal(t, rdb.FormatCount(64), v, "the shard count stored by the first call that needed it")
}

// dialCounter counts a client's attempts to open a connection.
type dialCounter struct {
	passHook
	n atomic.Int32
}

func (c *dialCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c.n.Add(1)
		return next(ctx, network, addr)
	}
}

// TestLoadingRedisIsReadLater: while Redis answers LOADING, the calls that need the shard count fail
// (not accepted), and the first call after it answers reads it.
func TestLoadingRedisIsReadLater(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	if tr.mini == nil {
		t.Skip("LOADING is simulated with a go-redis hook on miniredis")
	}
	client := tr.newClient(t)
	loading := &loadingHook{}
	loading.on.Store(true)
	client.AddHook(loading)
	d, err := New(client, Options{KeyPrefix: tr.prefix, AllowPrivateNetworks: true, Timeout: 2 * time.Second})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = d.Enqueue(ctx, Event{Type: "x", ID: "e1"})
	require.ErrorIs(t, err, ErrNotAccepted)
	require.ErrorContains(t, err, "LOADING")
	_, err = d.ProcessDue(ctx)
	require.Error(t, err, "the worker cannot read the schedule either")

	loading.on.Store(false)
	rc := newReceiver(t)
	mustCreate(t, d, rc, "x")
	_, err = d.Enqueue(ctx, Event{Type: "x", ID: "e1"})
	require.NoError(t, err)
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, 1, rc.count())
}

// loadingHook answers every command as a Redis loading its dataset does, while on.
type loadingHook struct {
	passHook
	on atomic.Bool
}

// loadingError is the reply of a Redis loading its dataset.
type loadingError struct{}

func (loadingError) Error() string { return "LOADING Redis is loading the dataset in memory" }
func (loadingError) RedisError()   {}

var errLoading error = loadingError{}

func (h *loadingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.on.Load() {
			cmd.SetErr(errLoading)
			return errLoading
		}
		return next(ctx, cmd)
	}
}

func (h *loadingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.on.Load() {
			for _, c := range cmds {
				c.SetErr(errLoading)
			}
			return errLoading
		}
		return next(ctx, cmds)
	}
}
