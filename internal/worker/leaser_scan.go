package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// scan reads, in one round trip (rdb.ReadDue), the webhooks with deliveries due (up to limit per
// shard) in the shards that may have some, and the inline attempts whose lease has ended in the
// shards whose earliest lease has, plus the sweep or every shard, as the scan hints plan it for mode
// (ScanHints.Plan). It returns those, what it read (for ScanHints.AfterLease), and the earliest time a
// scan has something to read next (ScanHints.Next).
func (l *Leaser) scan(ctx context.Context, now time.Time, limit int, mode ScanMode) ([]Due, []rdb.EndedInline, ScanRead, time.Time, error) {
	h, nowMs := l.Hints(), now.UnixMilli()
	plan := h.Plan(nowMs, mode)
	if plan.Empty() {
		return nil, nil, ScanRead{Limit: limit, Left: plan.Left}, h.Next(nowMs), nil
	}
	var ready [][]rdb.ReadyEntry
	var ended []rdb.EndedInline
	var inlineNext []int64
	err := timedRead("the schedules", func() (err error) {
		ready, ended, inlineNext, err = rdb.ReadDue(ctx, l.cfg.Redis, l.cfg.Keys, plan.Ready, plan.Inline, limit, nowMs)
		return err
	})
	if err != nil {
		h.Unread(plan) // not read: read them again
		return nil, nil, ScanRead{Limit: limit, Left: plan.Left}, time.Time{}, fmt.Errorf("webhooks: read schedules: %w", err)
	}
	due, read := h.Read(plan, nowMs, limit, ready, inlineNext)
	return due, ended, read, h.Next(nowMs), nil
}
