package worker

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/rdb"
)

// The schedule has two levels per shard, so that leasing is fair across webhooks. A single zset of
// due deliveries per shard, ordered by time, cannot be: a webhook with ten thousand due deliveries
// at its head (its circuit open, at its in-flight limit or rate limit) would hide every other webhook's
// due deliveries behind them. Instead:
//
//	{P:s}:ready        zset  webhook id -> at most when its earliest delivery in the shard is due (ms),
//	                         or later while the webhook is parked (circuit open, rate limit)
//	{P:s}:q:<webhook>  zset  delivery id -> next attempt, or lease end while leased (ms)
//
// A ready score is a lower bound, not a copy: a write that makes a delivery due lowers it (ZADD LT),
// while one that takes a delivery out of the due (a lease, a final outcome) leaves it as it is, so
// that the hot paths pay no read of the queue's head. A worker reads the ready zsets (the webhooks
// that may have something due), chooses how many deliveries to take of each webhook (its fair share
// of the free slots, within its in-flight limit, rate limit and circuit), reads that many due ids of
// each chosen queue, and leases them; when it reads a queue to its last due entry, or finds none, the
// lease sets the webhook's ready score to the queue's head (retime) in the same step, so a score that
// says due when nothing is costs one read, once. A webhook it cannot take from for a while (open
// circuit, rate limit) it parks: its ready score moves to when it can, one ZADD XX GT, so it no longer
// sits among the due; a later write that makes a delivery due undoes a park, and the next worker to
// see the webhook parks it again. The invariant every write keeps: a webhook with a delivery in a
// shard's queue has a ready score there, at most that delivery's score unless the webhook is parked.
//
// Dispatcher.Stats (internal/admin/stats.go, Backend.BacklogStats) reads this schedule without writing it, at a cost bounded
// whatever the backlog: the head of each ready zset (StatsWebhooksPerShard webhooks), then per shard one
// script over those webhooks' queues (ZCARD, ZCOUNT, head), then per shard one script over the lease
// byte of at most StatsLeasesPerShard records whose queue score lies within one lease from now — a
// leased delivery's score is its lease end, so only there can an attempt be in flight. Three pipelined
// round trips in all; nothing is maintained for it on the write paths.

const (
	// rateHorizon is how far ahead an attempt to a rate-limited webhook takes its slot (then waits
	// for it), and how far ahead a worker counts free slots when it decides how many to lease.
	rateHorizon = 100 * time.Millisecond
)

// LeaserConfig is what a Leaser leases with: a Dispatcher's Redis, units and clock.
type LeaserConfig struct {
	Redis   redis.UniversalClient
	Keys    rdb.Keys
	Scripts *rdb.LaneBatcher
	Breaker *breaker.Breaker
	Local   *LocalDue // what the Dispatcher queued itself, for its worker
	Flights *InFlight
	// LoadKeys reads the keyspace's layout unless it has been read.
	LoadKeys func(ctx context.Context) error
	// Webhooks reads webhooks by id: those found (a deleted one is missing), and the errors of those whose
	// stored JSON cannot be decoded.
	Webhooks   func(ctx context.Context, ids []string) (map[string]*rdb.WebhookRecord, map[string]error, error)
	Lease      time.Duration // how long a lease holds a delivery
	FirstShard uint32        // where the sweep of the schedule starts (replicas start apart)
	Now        func() time.Time
	Log        *slog.Logger
}

// Leaser is a Dispatcher's lease pass (see the file comment): it finds the webhooks with deliveries
// due, from the local hint (LocalDue) and the shards that may have some (ScanHints), shares the free
// slots among them (chooseTakes) and leases their due deliveries (leaseTakes). Safe for concurrent use:
// ProcessDue, and other Runs of the Dispatcher, may lease while Run does.
type Leaser struct {
	cfg       LeaserConfig
	hintsOnce sync.Once
	hintsPtr  *ScanHints   // made by Hints()
	turns     Turns        // where a pass starts sharing its slots among the webhooks due
	running   atomic.Int32 // Runs going
}

// NewLeaser returns the Leaser of cfg. It does no I/O.
func NewLeaser(cfg LeaserConfig) *Leaser { return &Leaser{cfg: cfg} }

// Hints returns the scan hints, made on first use (the keyspace's layout is loaded).
func (l *Leaser) Hints() *ScanHints {
	l.hintsOnce.Do(func() {
		l.hintsPtr = NewScanHints(l.cfg.Keys.Shards, l.cfg.FirstShard)
	})
	return l.hintsPtr
}

// MarkShard tells the worker that this Dispatcher wrote a shard's schedule: its next scan reads it.
func (l *Leaser) MarkShard(shard int) { l.Hints().Mark(shard) }

// QueueLocal tells this Dispatcher's worker, while Run is going, that delivery id of webhook is due in
// shard at at: it leases it by id (LocalDue); with no Run going, or the hint full, the worker's next
// scan reads the shard instead.
func (l *Leaser) QueueLocal(shard int, webhook, id string, at time.Time) {
	if l.running.Load() == 0 || !l.cfg.Local.Add(shard, webhook, id, at.UnixMilli(), l.cfg.Now().UnixMilli()) {
		l.MarkShard(shard)
	}
}

// WakeGrace is how much later than a delivery it claimed for the worker is due the other replicas'
// workers are woken for it (ms) while a Run of this Dispatcher is going: its own worker leases it at
// once (QueueLocal), and the others only if it has not by then (its slots full, or it died). A
// Dispatcher with no Run going has them woken at once.
const WakeGrace = 1000

// WakeDelay is the claims' wake delay (ms; lib/wake.lua's wakeDelay): WakeGrace while a Run of this
// Dispatcher is going, else 0.
func (l *Leaser) WakeDelay() int64 {
	if l.running.Load() > 0 {
		return WakeGrace
	}
	return 0
}

// Running counts a Run going until done is called; the last Run to end clears the local hint.
func (l *Leaser) Running() (done func()) {
	l.running.Add(1)
	return func() {
		if l.running.Add(-1) == 0 {
			l.cfg.Local.Clear()
		}
	}
}

// dueTargets are the webhooks a pass found due, as the registry holds them now.
type dueTargets struct {
	webhooks map[string]*rdb.WebhookRecord // a deleted webhook is missing
	broken   map[string]error              // webhooks whose stored JSON cannot be decoded
}

// Lease leases up to free due deliveries, shared fairly among the webhooks that have some due,
// reading the shards that mode says (scan). Inline attempts whose lease ended that the scan finds are
// first taken into their queues, and those shards read again. It returns the deliveries, each with its
// webhook, the earliest due time in the future, whether it found due deliveries it could take (then
// the caller looks again at once instead of waiting), and Redis's errors.
func (l *Leaser) Lease(ctx context.Context, free int, mode ScanMode) (jobs []LeasedDelivery, next time.Time, more bool, err error) {
	if err := l.cfg.LoadKeys(ctx); err != nil {
		return nil, time.Time{}, false, err
	}
	now := l.cfg.Now()
	local, localNext := l.cfg.Local.Due(now.UnixMilli())
	if mode == ScanHinted && l.cfg.Local.Takeable(l.cfg.Flights.Room) >= free {
		mode = ScanSweep // the local hint has enough due to fill the pass: no read but the sweep and the marked
	}
	due, strays, read, next, err := l.scan(ctx, now, free+16, mode)
	if err == nil && len(strays) > 0 {
		var took int
		if took, err = l.adopt(ctx, now, strays); took > 0 {
			for _, s := range strays {
				l.MarkShard(s.Shard)
			}
			due, _, read, next, err = l.scan(ctx, now, free+16, ScanHinted)
		}
	}
	if localNext > 0 && (next.IsZero() || localNext < next.UnixMilli()) {
		next = rdb.MilliTime(localNext)
	}
	due = l.cfg.Local.With(now.UnixMilli(), due, local)
	if err != nil || len(due) == 0 {
		return nil, next, read.Left, err // shards left unread may have some due: look again at once
	}
	t, err := l.readTargets(ctx, due)
	if err != nil {
		return nil, next, false, err
	}
	takes := l.chooseTakes(ctx, now, due, t, free)
	if len(takes) == 0 {
		return nil, next, read.Left, nil
	}
	jobs, heads, err := l.leaseTakes(ctx, now, takes, t)
	l.releaseUnusedProbes(ctx, takes, jobs)
	if err == nil {
		local := map[Queue]bool{}
		for _, w := range due {
			if w.Local {
				local[Queue{Shard: w.Shard, Webhook: w.ID}] = true
			}
		}
		l.Hints().AfterLease(now, read, heads, local)
	}
	for i := range jobs {
		jobs[i].Webhook = t.webhooks[jobs[i].Rec.WebhookID]
	}
	// Something was due and takeable: look again at once, whatever this lease got (another replica
	// may have won some of it, and more may be due behind it).
	return jobs, next, true, err
}

// readTargets reads the webhooks found due (LeaserConfig.Webhooks: a registry cache).
func (l *Leaser) readTargets(ctx context.Context, due []Due) (*dueTargets, error) {
	ids := make([]string, 0, len(due))
	seen := map[string]bool{}
	for _, w := range due {
		if !seen[w.ID] {
			seen[w.ID] = true
			ids = append(ids, w.ID)
		}
	}
	var found map[string]*rdb.WebhookRecord
	var broken map[string]error
	err := timedRead("the webhooks", func() (err error) {
		found, broken, err = l.cfg.Webhooks(ctx, ids)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &dueTargets{webhooks: found, broken: broken}, nil
}
