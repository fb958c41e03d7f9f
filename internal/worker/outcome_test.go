package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

func TestEarliestLeaseEnd(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_000_000)
	recs := []*rdb.Record{{LeaseEnd: now.Add(time.Second)}, {LeaseEnd: now.Add(2 * time.Second)}, {}}
	assert.Equal(t, now.Add(time.Second), EarliestLeaseEnd(now.Add(time.Minute), recs, []int{0, 1, 2}))
	assert.Equal(t, now.Add(2*time.Second), EarliestLeaseEnd(now.Add(time.Minute), recs, []int{1, 2}))
	assert.Equal(t, now.Add(time.Minute), EarliestLeaseEnd(now.Add(time.Minute), recs, []int{2}), "no lease: the limit")
}

func TestDecideByTheRetrySchedule(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_000_000)
	rec := &rdb.Record{Delivery: types.Delivery{ID: "d", Status: types.StatusPending}}
	schedule := []time.Duration{time.Minute}
	ok := Decide(rec, AttemptResult{At: now, OK: true, Code: 204}, schedule, time.Minute, now)
	assert.Equal(t, types.StatusSuccess, ok.Status)
	retry := Decide(rec, AttemptResult{At: now, Code: 500, Err: "HTTP 500"}, schedule, time.Minute, now)
	assert.Equal(t, types.StatusPending, retry.Status)
	assert.Equal(t, 1, retry.Step)
	assert.WithinRange(t, retry.Next, now.Add(48*time.Second), now.Add(72*time.Second), "a minute, ±RetryJitter")
	rec.Step = 1
	assert.Equal(t, types.StatusFailed, Decide(rec, AttemptResult{At: now, Code: 500}, schedule, time.Minute, now).Status, "the schedule spent")
	rec.Step = 0
	gone := Decide(rec, AttemptResult{At: now, Code: 410, Kind: destination.Gone, Err: "HTTP 410 Gone"}, schedule, time.Minute, now)
	assert.True(t, gone.Disable)
	assert.Equal(t, types.StatusFailed, gone.Status)
	assert.Equal(t, "HTTP 410 Gone: the webhook was disabled", gone.Err)
	permanent := Decide(rec, AttemptResult{At: now, Kind: destination.Permanent, Err: "too large"}, schedule, time.Minute, now)
	assert.Equal(t, types.StatusFailed, permanent.Status, "a permanent failure is not retried")
	rejected := Decide(rec, AttemptResult{At: now, Code: 404, Kind: destination.Rejected, Err: "HTTP 404"}, schedule, time.Minute, now)
	assert.Equal(t, types.StatusPending, rejected.Status, "a refusal is retried")
}
