package webhooks

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// redisText is every key of the test's prefix with everything it holds, as text: its name, then (by
// its type) its value, each hash field and value, list item, set or zset member, stream entry's
// fields and values — what a scan for a tenant's names or bytes has to search (all nodes of a
// cluster).
func (tr *testRedis) redisText(t testing.TB) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, k := range tr.keys(t) {
		typ, err := tr.rdb.Type(ctx, k).Result()
		require.NoError(t, err)
		var parts []string
		switch typ {
		case "none": // expired meanwhile
			continue
		case "string":
			v, err := tr.rdb.Get(ctx, k).Result()
			if errors.Is(err, redis.Nil) { // expired between TYPE and GET
				continue
			}
			require.NoError(t, err)
			parts = append(parts, v)
		case "hash":
			m, err := tr.rdb.HGetAll(ctx, k).Result()
			require.NoError(t, err)
			for _, f := range slices.Sorted(maps.Keys(m)) {
				parts = append(parts, f, m[f])
			}
		case "list":
			l, err := tr.rdb.LRange(ctx, k, 0, -1).Result()
			require.NoError(t, err)
			parts = append(parts, l...)
		case "set":
			l, err := tr.rdb.SMembers(ctx, k).Result()
			require.NoError(t, err)
			parts = append(parts, l...)
		case "zset":
			l, err := tr.rdb.ZRange(ctx, k, 0, -1).Result()
			require.NoError(t, err)
			parts = append(parts, l...)
		case "stream":
			l, err := tr.rdb.XRange(ctx, k, "-", "+").Result()
			require.NoError(t, err)
			for _, m := range l {
				for _, f := range slices.Sorted(maps.Keys(m.Values)) {
					parts = append(parts, f, m.Values[f].(string))
				}
			}
		default:
			t.Fatalf("key %s has type %s, which redisText does not read", k, typ)
		}
		out[k] = strings.Join(parts, "\n")
	}
	return out
}

// naming lists the keys whose name or content (redisText) holds any of needles, each with the first
// needle it holds.
func naming(text map[string]string, needles ...string) map[string]string {
	found := map[string]string{}
	for k, v := range text {
		for _, n := range needles {
			if strings.Contains(k, n) || strings.Contains(v, n) {
				found[k] = n
				break
			}
		}
	}
	return found
}
