package rdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/smartdrop/webhooks/internal/types"
)

func TestOutcomeRunLayout(t *testing.T) {
	t.Parallel()
	k := KeysOf("p", 4)
	now := time.UnixMilli(1_000_000)
	next := now.Add(time.Minute)
	keys, args := OutcomeRun(k, 2, now, []OutcomeWrite{
		{ID: "d1", WebhookID: "w1", Token: "t1", Status: types.StatusPending, Next: next, Mode: ScheduleQueued, Record: "r1"},
		{ID: "d2", WebhookID: "w2", Token: "t2", Status: types.StatusSuccess, Mode: ScheduleInline, Record: "r2"},
	})
	assert.Equal(t, []string{k.Ready(2), k.Inline(2), k.Delivery(2, "d1"), k.Queue(2, "w1"), k.Delivery(2, "d2"), k.Queue(2, "w2")}, keys)
	assert.Equal(t, []any{now.UnixMilli(),
		"d1", "t1", "pending", next.UnixMilli(), "w1", ScheduleQueued,
		"d2", "t2", "success", UnixMilli(time.Time{}), "w2", ScheduleInline,
		"r1", "r2"}, args, "per outcome its six arguments, then the records")
}
