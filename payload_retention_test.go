package webhooks

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/rdb"
)

// TestPayloadRetentionBounds: New takes (Options.withDefaults) 0 (as long as the records) and [MinPayloadRetention,
// Retention], and refuses anything else in words naming both bounds.
func TestPayloadRetentionBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		keep time.Duration
		ok   bool
	}{
		{0, true}, {MinPayloadRetention, true}, {24 * time.Hour, true}, {DefaultRetention, true},
		{-time.Second, false}, {MinPayloadRetention - time.Second, false}, {DefaultRetention + time.Second, false},
	} {
		_, err := Options{PayloadRetention: tc.keep}.withDefaults()
		if tc.ok {
			assert.NoError(t, err, "PayloadRetention %s", tc.keep)
			continue
		}
		require.ErrorIs(t, err, ErrInvalidOptions, "PayloadRetention %s", tc.keep)
		assert.Contains(t, err.Error(), "PayloadRetention "+tc.keep.String()+" must be 0 (as long as the records) or in [1m0s, Retention 168h0m0s]")
	}
}

// shortenPayloadRetention makes d keep payloads for keep, below MinPayloadRetention (which New
// enforces), so that a real Redis expires them within a test.
func shortenPayloadRetention(d *Dispatcher, keep time.Duration) {
	d.opts.PayloadRetention, d.resend.PayloadRetention, d.admin.PayloadRetention = keep, keep, keep
}

// TestPayloadRetentionDropsThePayloadKeepsTheRecord: with Options.PayloadRetention, an event's
// payload (unordered, ordered, and one stored for the replay index alone) is gone from Redis once it
// has passed — no key or value holds its bytes — while its delivery records are still listed with
// their attempts and status; the API's delivery view and payload route say "payload expired on
// <creation + PayloadRetention>", Redeliver refuses the delivery with ErrPayloadExpired (the API with
// 409 payload_expired) and sends nothing, and a Redeliver before it does not keep the payload longer.
// miniredis fast-forwards; a real Redis or a cluster waits out a payload retention shortened to
// 3 s.
func TestPayloadRetentionDropsThePayloadKeepsTheRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{PayloadRetention: time.Hour, ReplayIndex: true})
	keep := time.Hour
	if tr.mini == nil {
		keep = 3 * time.Second
		shortenPayloadRetention(d, keep)
	}
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "pool.*")
	secret := "payload-bytes-" + randomHex(8)
	var ids []string
	for i, evt := range []Event{
		{Type: "pool.created", ID: "evt-" + randomHex(6), Data: map[string]string{"card": secret + "-a"}},
		{Type: "pool.created", ID: "evt-" + randomHex(6), Data: map[string]string{"card": secret + "-b"}, OrderKey: "pool-1"},
	} {
		res, err := d.Dispatch(ctx, evt)
		require.NoError(t, err)
		require.Len(t, res, 1, "event %d", i)
		require.Equal(t, StatusSuccess, res[0].Delivery.Status, "event %d", i)
		ids = append(ids, res[0].Delivery.ID)
	}
	_, err := d.Dispatch(ctx, Event{Type: "nobody.listens", ID: "evt-" + randomHex(6), Data: map[string]string{"card": secret + "-c"}})
	require.NoError(t, err)
	require.Len(t, naming(tr.redisText(t), secret), 3, "each payload is stored once, under its event")
	for k := range naming(tr.redisText(t), secret) {
		ttl, err := tr.rdb.PTTL(ctx, k).Result()
		require.NoError(t, err)
		assert.LessOrEqual(t, ttl, keep, "%s expires within PayloadRetention", k)
	}

	// A Redeliver (here a resend of a success) before the payload expires does not keep it longer.
	clock.Advance(6 * time.Second)
	_, err = d.Redeliver(ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, 3, rc.count(), "the resend went out")
	scoped := rdb.ScopedEventID("", readDelivery(t, d, ids[0]).EventID)
	ttl, err := tr.rdb.PTTL(ctx, d.keys.Event(d.keys.ShardOf(scoped), scoped)).Result()
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, keep, "Redeliver left the payload's expiry as it was")

	if tr.mini != nil {
		tr.mini.FastForward(keep + time.Second)
	} else {
		eventually(t, 20*time.Second, func() bool { return len(naming(tr.redisText(t), secret)) == 0 }, "the payloads expire")
	}
	clock.Advance(keep)
	assert.Empty(t, naming(tr.redisText(t), secret), "no key or value holds a payload's bytes")

	page, err := d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{})
	require.NoError(t, err)
	require.Len(t, page.Deliveries, 2, "the records are still listed")
	for _, dl := range page.Deliveries {
		assert.Equal(t, StatusSuccess, dl.Status)
		assert.NotEmpty(t, dl.History, "attempts kept")
	}

	c := newAPI(t, d)
	for _, id := range ids {
		dl, err := d.Deliveries().Get(ctx, id)
		require.NoError(t, err)
		words := "payload expired on " + dl.CreatedAt.Add(keep).UTC().Format(time.DateTime) + " (UTC)"
		var detail map[string]any
		c.do(http.MethodGet, "/deliveries/"+id, "").ok(t, http.StatusOK, &detail)
		assert.Equal(t, words, detail["payload_expired"], "the delivery view of %s", id)
		var p api.PayloadView
		c.do(http.MethodGet, "/deliveries/"+id+"/payload", "").ok(t, http.StatusOK, &p)
		assert.Equal(t, "null", string(p.Payload))
		assert.Equal(t, words, p.PayloadExpired, "the payload route of %s", id)
		assert.True(t, p.PayloadExpiredAt.Equal(dl.CreatedAt.Add(keep)), "payload_expired_at %s", p.PayloadExpiredAt)
	}

	clock.Advance(6 * time.Second)
	before, err := d.Deliveries().Get(ctx, ids[0])
	require.NoError(t, err)
	_, err = d.Redeliver(ctx, ids[0])
	require.ErrorIs(t, err, ErrPayloadExpired)
	assert.Contains(t, err.Error(), "its payload expired on "+before.CreatedAt.Add(keep).UTC().Format(time.DateTime)+" (UTC) (Options.PayloadRetention): there is nothing to send again")
	msg := c.do(http.MethodPost, "/deliveries/"+ids[0]+"/redeliver", "").apiErr(t, http.StatusConflict, "payload_expired")
	assert.Contains(t, msg, "payload expired on")
	after, err := d.Deliveries().Get(ctx, ids[0])
	require.NoError(t, err)
	assert.Equal(t, before, after, "the refused delivery is left as it was")
	assert.Equal(t, 3, rc.count(), "nothing more was sent")
}

// page0 reads a delivery.
func readDelivery(t testing.TB, d *Dispatcher, id string) *Delivery {
	t.Helper()
	dl, err := d.Deliveries().Get(context.Background(), id)
	require.NoError(t, err)
	return dl
}
