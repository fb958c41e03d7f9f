package worker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// TestAttemptRefusesWhatMustNotGoOut: a deleted webhook's delivery, a disabled one's (but a test
// send's) and one whose event body expired fail without a request; a test send to a disabled webhook
// is not refused for it.
func TestAttemptRefusesWhatMustNotGoOut(t *testing.T) {
	t.Parallel()
	sent := 0
	a := NewAttempter(AttempterConfig{Send: func(context.Context, *rdb.WebhookRecord, *rdb.Record, []byte) AttemptResult {
		sent++
		return AttemptResult{}
	}})
	rec := func(eventType, eventID string) *rdb.Record {
		return &rdb.Record{Delivery: types.Delivery{ID: "dlv_1", WebhookID: "wh_1", EventType: eventType, EventID: eventID,
			Status: types.StatusPending}}
	}
	disabled := &rdb.WebhookRecord{Webhook: types.Webhook{ID: "wh_1", Disabled: true}}
	ctx := context.Background()
	for name, c := range map[string]struct {
		j    LeasedDelivery
		body []byte
		err  string
	}{
		"deleted":      {LeasedDelivery{Rec: rec("x", "e1")}, []byte("{}"), "webhook deleted: not attempted"},
		"disabled":     {LeasedDelivery{Rec: rec("x", "e1"), Webhook: disabled}, []byte("{}"), "webhook disabled: not attempted"},
		"body expired": {LeasedDelivery{Rec: rec(types.TestEventType, "test_1"), Webhook: disabled}, nil, "event body expired: not attempted"},
	} {
		o := a.Attempt(ctx, c.j, c.body)
		assert.Equal(t, types.StatusFailed, o.Status, name)
		assert.Equal(t, c.err, o.Err, name)
		assert.False(t, o.Attempted, name)
	}
	assert.Zero(t, sent, "no request")
}

// TestLeaseLeftToAttempt: an attempt starts only with the whole attempt and half the lease's margin
// beyond it left of its lease.
func TestLeaseLeftToAttempt(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 15*time.Second, LeaseLeftToAttempt(20*time.Second, 10*time.Second))
	assert.Equal(t, time.Second, LeaseLeftToAttempt(time.Second, time.Second), "no margin")
}
