package ratelimit

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// Test sends' bursts, as the limiters grant them: a slot is granted while its start lies within
// TestSendsBurst of now, so an idle limiter grants the slot now and one per interval up to the burst.
var (
	webhookBurst = int(TestSendsBurst/Interval(TestSendsPerWebhook)) + 1 // 11
	tenantBurst  = int(TestSendsBurst/Interval(TestSendsPerTenant)) + 1  // 51
)

// testSendKeys is a key prefix of the test's own: its keys are deleted when the test ends (on a real
// Redis; miniredis goes with the test).
func testSendKeys(t *testing.T, tr *testRedis) rdb.Keys {
	t.Helper()
	keys := rdb.KeysOf("wht_ts_"+strings.ToLower(rand.Text()[:8]), 1)
	if tr.mini == nil {
		t.Cleanup(func() {
			for k := range prefixValues(t, tr, keys.Prefix()) {
				_ = tr.rdb.Del(context.Background(), k).Err()
			}
		})
	}
	return keys
}

// prefixValues is every key holding prefix, with its value (every master of a cluster).
func prefixValues(t *testing.T, tr *testRedis, prefix string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var mu sync.Mutex
	out := map[string]string{}
	node := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, "*"+prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			v, err := c.Get(ctx, iter.Val()).Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if err != nil {
				return err
			}
			mu.Lock()
			out[iter.Val()] = v
			mu.Unlock()
		}
		return iter.Err()
	}
	switch c := tr.rdb.(type) {
	case *redis.ClusterClient:
		require.NoError(t, c.ForEachMaster(ctx, node))
	case *redis.Client:
		require.NoError(t, node(ctx, c))
	default:
		t.Fatalf("unexpected client %T", tr.rdb)
	}
	return out
}

// pass lets d of Redis's clock pass: on miniredis, whose clock the test holds still, at once.
func (tr *testRedis) pass(d time.Duration, now *time.Time) {
	if tr.mini != nil {
		*now = now.Add(d)
		tr.mini.SetTime(*now)
		return
	}
	time.Sleep(d)
}

// testSendRefusal is what a refused TakeTestSend says: which limit, and when to try again.
func testSendRefusal(t *testing.T, err error) (limit string, retryIn time.Duration) {
	t.Helper()
	require.ErrorIs(t, err, types.ErrTestSendsLimited)
	require.NotErrorIs(t, err, types.ErrNotAccepted)
	msg := err.Error()
	switch {
	case strings.Contains(msg, fmt.Sprintf(": its tenant takes %d per second;", TestSendsPerTenant)):
		limit = "tenant"
	case strings.Contains(msg, fmt.Sprintf(" takes %d per second;", TestSendsPerWebhook)) && strings.Contains(msg, ": webhook "):
		limit = "webhook"
	default:
		t.Fatalf("refusal names no limit: %q", msg)
	}
	_, after, ok := strings.Cut(msg, "try again in ")
	require.True(t, ok, "refusal says when to try again: %q", msg)
	retryIn, err = time.ParseDuration(after)
	require.NoError(t, err, "refusal's delay: %q", msg)
	return limit, retryIn
}

// TestRefusedTestSendSpendsNothing: a test send the tenant's limiter refuses writes nothing, so it
// does not spend a slot of its webhook's limiter (issue 33). Once the tenant's limiter frees, the
// webhook has its whole burst, however many test sends were refused meanwhile.
func TestRefusedTestSendSpendsNothing(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	keys := testSendKeys(t, tr)
	ctx := context.Background()
	now := time.Now()
	if tr.mini != nil {
		tr.mini.SetTime(now) // Redis's clock held still: no slot refills while a slow machine runs the sends
	}

	// exhaust spends the tenant's limiter with test sends to other webhooks of the tenant, until its
	// next slot is more than half an interval off (on a real Redis, one may free as the limiter is
	// exhausted); it returns when, at the earliest, that slot frees, by this process's clock.
	others := 0
	exhaust := func() time.Time {
		for i := 0; ; i++ {
			require.Less(t, i, 2*tenantBurst, "the tenant's limiter refuses within its burst")
			start := time.Now()
			err := TakeTestSend(ctx, tr.rdb, keys, fmt.Sprintf("wh_other%d", others/webhookBurst), "acme")
			if err == nil {
				others++
				continue
			}
			limit, retryIn := testSendRefusal(t, err)
			require.Equal(t, "tenant", limit, "the tenant's limiter refuses first: %v", err)
			if retryIn > Interval(TestSendsPerTenant)/2 {
				return start.Add(retryIn)
			}
			tr.pass(retryIn+time.Millisecond, &now)
		}
	}

	// Refused test sends to webhook W, more than its burst: none writes anything. On a real Redis a
	// loaded machine can outlive the tenant's refusal (its next slot is an interval off at most) before
	// the sends are done: a send granted after that slot freed ends the window, and the sends start
	// over, to a new W, on the tenant's limiter spent again (5 windows at most). A send granted before
	// that slot could free, or on miniredis, whose clock the test holds still, fails the test.
	var retryIn time.Duration
	w := ""
	for window := 0; w == ""; window++ {
		require.Less(t, window, 5, "the tenant's refusal outlived by 5 windows in a row")
		freeAt := exhaust()
		candidate := fmt.Sprintf("wh_W%d", window)
		before := prefixValues(t, tr, keys.Prefix())
		granted := false
		for i := range webhookBurst + 1 {
			err := TakeTestSend(ctx, tr.rdb, keys, candidate, "acme")
			if err == nil {
				require.Nil(t, tr.mini, "refusal %d: granted on miniredis, whose clock is held still", i)
				require.False(t, time.Now().Before(freeAt.Add(-5*time.Millisecond)), "refusal %d: granted before the tenant's slot freed", i)
				granted = true
				break
			}
			var limit string
			limit, retryIn = testSendRefusal(t, err)
			assert.Equal(t, "tenant", limit, "refusal %d: %v", i, err)
			assert.Positive(t, retryIn, "refusal %d", i)
			assert.LessOrEqual(t, retryIn, Interval(TestSendsPerTenant), "refusal %d: the tenant's next slot is one interval off at most", i)
		}
		if granted {
			t.Logf("window %d outlived the tenant's refusal; again with a new webhook", window)
			continue
		}
		assert.Equal(t, before, prefixValues(t, tr, keys.Prefix()), "a refused test send writes nothing")
		w = candidate
	}

	// Once the tenant's limiter has freed W's burst, W takes its whole burst, then its own limiter refuses.
	tr.pass(min(retryIn, Interval(TestSendsPerTenant))+time.Duration(webhookBurst-1)*Interval(TestSendsPerTenant)+
		20*time.Millisecond, &now)
	// On a real Redis, W's limiter frees a slot per interval meanwhile: a loaded machine's sends may
	// earn one grant more per interval they took (none on miniredis, whose clock the test holds still).
	start := time.Now()
	for i := range webhookBurst {
		require.NoError(t, TakeTestSend(ctx, tr.rdb, keys, w, "acme"), "W's test send %d of its burst", i)
	}
	refilled := func() int {
		if tr.mini != nil {
			return 0
		}
		return int(time.Since(start) / Interval(TestSendsPerWebhook))
	}
	for extra := 0; ; extra++ {
		require.Less(t, extra, 5, "W's own limiter refuses within 5 sends past its burst")
		err := TakeTestSend(ctx, tr.rdb, keys, w, "acme")
		if err == nil {
			require.Less(t, extra, refilled(), "W granted past its burst, more than the slots freed since")
			continue
		}
		limit, _ := testSendRefusal(t, err)
		assert.Equal(t, "webhook", limit, "W's own limiter refuses past its burst")
		break
	}
}

// TestTestSendsConcurrentWithinBothLimits: 16 goroutines sending tests to two webhooks of one tenant
// at once are granted no more than either limiter's burst (with what refills over the run on a real
// Redis), and every slot a webhook's limiter spent is a test send granted.
func TestTestSendsConcurrentWithinBothLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		tenantFor int // slots the tenant's limiter has left at the start: fewer than the two webhooks' bursts, or more
	}{
		{"tenant binds", 15},
		{"webhooks bind", 2*webhookBurst + 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTestRedis(t)
			keys := testSendKeys(t, tr)
			ctx := context.Background()
			if tr.mini != nil {
				tr.mini.SetTime(time.Now())
			}
			start := time.Now()
			t0, err := tr.rdb.Time(ctx).Result()
			require.NoError(t, err)

			for i := range tenantBurst - tc.tenantFor {
				require.NoError(t, TakeTestSend(ctx, tr.rdb, keys, fmt.Sprintf("wh_other%d", i/(webhookBurst-1)), "acme"), "send %d", i)
			}

			const goroutines, each = 16, 4
			var (
				mu      sync.Mutex
				granted = map[string]int{}
				wg      sync.WaitGroup
			)
			runStart := time.Now()
			for g := range goroutines {
				c := tr.rdb
				if g%4 == 0 {
					c = tr.newClient(t)
				}
				wg.Go(func() {
					for i := range each {
						id := []string{"wh_A", "wh_B"}[(g+i)%2]
						err := TakeTestSend(ctx, c, keys, id, "acme")
						if err != nil && !errors.Is(err, types.ErrTestSendsLimited) {
							t.Errorf("test send: %v", err)
							return
						}
						if err == nil {
							mu.Lock()
							granted[id]++
							mu.Unlock()
						}
					}
				})
			}
			wg.Wait()
			elapsed, runElapsed := time.Since(start), time.Since(runStart)
			if tr.mini != nil {
				elapsed, runElapsed = 0, 0
			}

			// What a limiter can grant over a run of d from the state it started in.
			refill := func(d time.Duration, perSecond int) int { return int(d / Interval(perSecond)) }
			total := granted["wh_A"] + granted["wh_B"]
			assert.LessOrEqual(t, total, tc.tenantFor+refill(elapsed, TestSendsPerTenant), "the tenant's limit: %v", granted)
			for _, id := range []string{"wh_A", "wh_B"} {
				assert.LessOrEqual(t, granted[id], webhookBurst+refill(runElapsed, TestSendsPerWebhook), "%s's limit", id)
			}
			if tc.tenantFor < 2*webhookBurst {
				assert.GreaterOrEqual(t, total, tc.tenantFor, "the tenant's slots left are all granted: %v", granted)
			} else if runElapsed < Interval(TestSendsPerWebhook) {
				assert.Equal(t, map[string]int{"wh_A": webhookBurst, "wh_B": webhookBurst}, granted, "each webhook's burst is granted")
			}

			// Each webhook's limiter spent as many slots as it granted, none for a test send the tenant's
			// refused: its next free slot is that many intervals past the first grant, which lies within
			// the run (shorter than an interval, or the count is not exact).
			if elapsed >= Interval(TestSendsPerWebhook) {
				t.Logf("run of %s: slots spent not checked", elapsed)
				return
			}
			for _, id := range []string{"wh_A", "wh_B"} {
				tat, err := tr.rdb.Get(ctx, keys.WebhookTestSends("acme", id)).Int64()
				require.NoError(t, err, id)
				spent := time.Duration(tat-t0.UnixMicro()) * time.Microsecond
				assert.Equal(t, granted[id], int(spent/Interval(TestSendsPerWebhook)), "%s: slots spent, granted %v", id, granted)
			}
		})
	}
}
