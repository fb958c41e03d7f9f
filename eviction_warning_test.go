package webhooks

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// infoMemory answers INFO memory with the policy given, whatever the server says.
type infoMemory struct {
	passHook
	policy string
}

func (h infoMemory) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "info" {
			return next(ctx, cmd)
		}
		c := cmd.(*redis.StringCmd)
		c.SetErr(nil)
		c.SetVal("# Memory\r\nused_memory:1000\r\nmaxmemory_policy:" + h.policy + "\r\n")
		return nil
	}
}

// TestRunWarnsWhenRedisMayEvict: Run logs, once as it starts, a warning naming maxmemory-policy when
// Redis may evict keys, and nothing when it may not.
func TestRunWarnsWhenRedisMayEvict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy string
		warns  bool
	}{
		{"allkeys-lru", true}, {"volatile-lru", true}, {"noeviction", false},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			t.Parallel()
			tr := newTestRedis(t)
			c := tr.newClient(t)
			c.AddHook(infoMemory{policy: tc.policy})
			var logs lockedBuffer
			d := newTestDispatcherOn(t, c, tr, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			require.NoError(t, d.Run(ctx))
			warned := strings.Count(logs.String(), "set maxmemory-policy to noeviction")
			if tc.warns {
				assert.Equal(t, 1, warned, "one warning: %s", logs.String())
				assert.Contains(t, logs.String(), "maxmemory_policy="+tc.policy)
			} else {
				assert.Zero(t, warned, logs.String())
			}
		})
	}
}
