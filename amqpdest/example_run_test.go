package amqpdest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExample runs ExampleNew's code against the machine's broker and a miniredis.
func TestExample(t *testing.T) {
	t.Parallel()
	u := brokerURL(t)
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	require.NoError(t, publishAndConsume(ctx, rdb, u.String(), &out))
	assert.Equal(t, "delivery: success\nverified: order.paid application/json message_id is the webhook-id: true\n", out.String())
}
