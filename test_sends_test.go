package webhooks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTestSendsAreBounded: a webhook takes a burst of test sends, then refuses more with
// ErrTestSendsLimited (saying when to try again) and claims nothing for them; a tenant's webhooks
// together are bounded too; a test send's record is kept TestSendRetention, not Options.Retention.
func TestTestSendsAreBounded(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	if tr.mini != nil {
		// The bounds run on Redis's clock: held still, no slot refills while a slow machine runs the
		// test's sends (on a real Redis the sends take far less than a refill).
		tr.mini.SetTime(time.Now())
	}
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	ctx := context.Background()
	w, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}})
	require.NoError(t, err)
	// Sends until one is refused. On a real Redis the webhook's slot refills once a second while the
	// sends run, so the bound counts the seconds they took (on miniredis the clock is held: none).
	sent, refused := 0, 0
	var first *Delivery
	start := time.Now()
	for i := 0; i < 100 && refused == 0; i++ {
		dl, err := d.SendTest(ctx, w.ID)
		switch {
		case errors.Is(err, ErrTestSendsLimited):
			refused++
			assert.Contains(t, err.Error(), "try again in")
		default:
			require.NoError(t, err)
			sent++
			if first == nil {
				first = dl
			}
		}
	}
	took := time.Since(start)
	if tr.mini != nil {
		took = 0
	}
	burst := int(TestSendsPerWebhook * TestSendsBurst.Seconds())
	assert.Equal(t, 1, refused, "a send is refused once the burst is spent")
	assert.GreaterOrEqual(t, sent, burst, "a burst of 10 goes out")
	assert.LessOrEqual(t, sent, burst+1+int(TestSendsPerWebhook*took.Seconds()),
		"then 1 per second (the sends took %s)", took)
	assert.Equal(t, sent, rc.count(), "nothing is sent, nor claimed, for a refused test send")

	require.NotNil(t, first)
	assert.Equal(t, TestSendRetention, first.ExpiresAt.Sub(first.CreatedAt), "kept TestSendRetention")
	shard, err := d.keys.DeliveryShard(first.ID)
	require.NoError(t, err)
	ttl, err := tr.rdb.PTTL(ctx, d.keys.Delivery(shard, first.ID)).Result()
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, TestSendRetention, "its record's key expires with it")
	assert.Greater(t, ttl, time.Duration(0))

	// A tenant's webhooks together: 10 sends to each of more webhooks than the tenant's burst allows.
	// Its slots refill while the test runs (5 a second on a real Redis), so it goes on until one is
	// refused: at most 40 webhooks, 400 sends, more than 50 + 5 a second over any plausible run.
	tenantSent, tenantRefused := 0, 0
	for i := 0; i < 40 && tenantRefused == 0; i++ {
		tw, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "acme"})
		require.NoError(t, err, i)
		for range 10 {
			_, err := d.SendTest(ctx, tw.ID)
			switch {
			case errors.Is(err, ErrTestSendsLimited) && strings.Contains(err.Error(), "its tenant"):
				tenantRefused++
			case tenantRefused == 0:
				require.NoError(t, err)
				tenantSent++
			}
		}
	}
	assert.Positive(t, tenantRefused, "the tenant's bound refuses some")
	assert.GreaterOrEqual(t, tenantSent, int(TestSendsPerTenant*TestSendsBurst.Seconds()), "not before the tenant's burst is spent")
}
