package webhooks

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
)

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runAgainstDeadRedis runs a Dispatcher's worker for a while against an address where no Redis
// answers. It may run on a goroutine of its own (it never stops the test).
func runAgainstDeadRedis(t *testing.T, opts Options) {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { _ = client.Close() })
	opts.KeyPrefix = "wht_down_" + randomHex(4)
	d, err := New(client, opts)
	if !assert.NoError(t, err) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond) // 4 or more failed passes
	defer cancel()
	assert.NoError(t, d.Run(ctx))
}

// TestWorkerThatCannotReachRedisSaysSo: a Run that cannot reach Redis warns once per interval, not
// once per failed pass (its passes fail every 0.1–0.8 s here): through Options.Logger when set, and
// through slog.Default() when none is (not silently). Not parallel: it sets slog's default logger.
// The two Runs go at once: one with a Logger, one without; the default logger must get the warning
// of the second only (the first's going there too would count 2).
func TestWorkerThatCannotReachRedisSaysSo(t *testing.T) {
	var set, def lockedBuffer
	was := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, nil)))
	t.Cleanup(func() { slog.SetDefault(was) })
	var wg sync.WaitGroup
	wg.Go(func() { runAgainstDeadRedis(t, Options{Logger: slog.New(slog.NewTextHandler(&set, nil))}) })
	wg.Go(func() { runAgainstDeadRedis(t, Options{}) })
	wg.Wait()
	assert.Equal(t, 1, strings.Count(set.String(), "worker could not lease"), "one warning per interval: %s", set.String())
	assert.Equal(t, 1, strings.Count(def.String(), "worker could not lease"), "with no Logger, through slog.Default(): %s", def.String())
	assert.NotContains(t, def.String(), "webhooks: attempt", "nothing else goes to slog.Default()")
}
