package worker

import (
	"context"
	"errors"
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

// adopt takes stray inline deliveries (whose lease ended with no outcome recorded) into their webhooks'
// queues (rdb.Adopt), one script per shard, the shards' scripts together. It returns how many it took.
func (l *Leaser) adopt(ctx context.Context, now time.Time, strays []rdb.EndedInline) (int, error) {
	byShard := map[int][]rdb.EndedInline{}
	for _, s := range strays {
		byShard[s.Shard] = append(byShard[s.Shard], s)
	}
	type result struct {
		n   int64
		err error
	}
	results := make(chan result, len(byShard))
	for shard, ss := range byShard {
		run := rdb.AdoptRun(l.cfg.Keys, shard, now.UnixMilli(), ss)
		go func() {
			n, err := l.cfg.Scripts.Run(ctx, run.Script, run.Keys, run.Args...).Int64()
			results <- result{n, err}
		}()
	}
	took, errs := 0, []error(nil)
	for range byShard {
		r := <-results
		took += int(r.n)
		if r.err != nil {
			errs = append(errs, fmt.Errorf("webhooks: take over inline attempts: %w", r.err))
		}
	}
	return took, errors.Join(errs...)
}
