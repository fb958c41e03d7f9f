package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// scan reads, in one round trip (rdb.ReadDue), the webhooks with deliveries due (up to limit per
// shard) in the shards that may have some, plus a sweep or every shard, as the scan hints plan it for
// mode (ScanHints.Plan), and the inline attempts whose lease has ended in the inline zsets read. It
// returns those, what it read (for ScanHints.AfterLease), and the earliest due time in the future that
// it knows of.
func (l *Leaser) scan(ctx context.Context, now time.Time, limit int, mode ScanMode) ([]Due, []rdb.EndedInline, ScanRead, time.Time, error) {
	h, nowMs := l.hints(), now.UnixMilli()
	plan := h.Plan(nowMs, mode)
	if plan.Empty() {
		return nil, nil, ScanRead{Limit: limit, Left: plan.Left}, h.KnownDue(nowMs), nil
	}
	ready, ended, err := rdb.ReadDue(ctx, l.cfg.Redis, l.cfg.Keys, plan.Ready, plan.Inline, limit, nowMs)
	if err != nil {
		h.Unread(plan) // not read: read them again
		return nil, nil, ScanRead{Limit: limit, Left: plan.Left}, time.Time{}, fmt.Errorf("webhooks: read schedules: %w", err)
	}
	due, read := h.Read(plan, nowMs, limit, ready)
	return due, ended, read, h.KnownDue(nowMs), nil
}
