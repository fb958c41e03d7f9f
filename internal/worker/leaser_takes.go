package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/ratelimit"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// reserve takes, for the due ids read of one webhook, its in-flight slots, no more than its rate
// limit has free within rateHorizon (counted from the limiter's TAT read with the candidates), and
// returns how many of them may be leased. A webhook with no free rate slot is parked until it has one:
// then it returns that time too.
func (l *Leaser) reserve(ctx context.Context, now time.Time, wh *rdb.WebhookRecord, id, tat string, want int, due []Due) (int, time.Time) {
	var parked time.Time
	if wh != nil && wh.RateLimit > 0 {
		free, wait := ratelimit.Free(tat, now, wh.RateLimit, rateHorizon)
		if free == 0 {
			parked = now.Add(max(wait, MinWait))
			l.park(ctx, due, parked)
		}
		want = min(want, free)
	}
	return l.cfg.Flights.Take(id, want), parked
}

// leaseTakes reads the due ids of each take's queue, reserves in-flight slots for them within the
// webhook's free rate slots (reserve), and leases them, each shard in one script (the shards' scripts
// go out together). A webhook due in several shards gets no more than its share in all. It returns the
// leased deliveries, the new ready scores of the webhooks it retimed (leased), and the errors.
// Slots reserved for what was not leased are given back.
func (l *Leaser) leaseTakes(ctx context.Context, now time.Time, takes []Take, t *dueTargets) ([]LeasedDelivery, map[Queue]int64, error) {
	ids, tats, err := l.candidates(ctx, now, takes, t)
	if err != nil {
		return nil, nil, err
	}
	hinted := make([][]string, len(takes)) // the ids of local takes, to give back those not leased
	read := map[string]int{}               // ids read per webhook, within its share
	byID := map[string][]int{}             // takes per webhook
	exhausted := make([]int, len(takes))
	for i, tk := range takes {
		switch {
		case tk.Local:
			hinted[i], exhausted[i] = ids[i], -1
		case len(ids[i]) < tk.N:
			exhausted[i] = len(ids[i]) // every due id of its queue was read: retime it if all are kept
		default:
			exhausted[i] = -1
		}
		ids[i] = ids[i][:min(len(ids[i]), tk.N-read[tk.ID])]
		read[tk.ID] += len(ids[i])
		byID[tk.ID] = append(byID[tk.ID], i)
	}
	reserved := map[string]int{}
	parked := map[string]time.Time{}
	for id, idx := range byID {
		due := make([]Due, len(idx))
		for k, i := range idx {
			due[k] = takes[i].Due
		}
		n, until := l.reserve(ctx, now, t.webhooks[id], id, tats[id], read[id], due)
		parked[id] = until
		reserved[id] = n
		for _, i := range idx { // keep the first n ids
			ids[i] = ids[i][:min(len(ids[i]), n)]
			n -= len(ids[i])
		}
	}
	// A take with ids goes to its shard's script; so does one whose queue had no due id at all. The
	// script retimes a webhook whose every due id it was given (none, or all that were read, when the
	// read found fewer than it asked for), so a ready entry that says due when its queue has nothing
	// due is corrected by the first worker to read it and cannot make workers spin. (One whose ids were
	// dropped for its share, cap or rate limit is not retimed: a retime would undo the park that
	// reserve just made.)
	byShard := map[int][]int{}
	retime := make([]bool, len(takes))
	for i, tk := range takes {
		if tk.Local {
			l.cfg.Local.PutBack(tk.Shard, tk.ID, hinted[i][len(ids[i]):], rdb.UnixMilli(parked[tk.ID]))
		}
		retime[i] = exhausted[i] == len(ids[i])
		if len(ids[i]) > 0 || retime[i] {
			byShard[tk.Shard] = append(byShard[tk.Shard], i)
		}
	}
	// Every shard's script in one pipeline of its own, sent at once (not behind the claims' batches).
	shardLeases := make([]*shardLease, 0, len(byShard))
	runs := make([]rdb.ScriptRun, 0, len(byShard))
	for shard, idx := range byShard {
		st, sids, rt := make([]Take, len(idx)), make([][]string, len(idx)), make([]bool, len(idx))
		for k, i := range idx {
			st[k], sids[k], rt[k] = takes[i], ids[i], retime[i]
		}
		sl := l.newShardLease(shard, now, st, sids, rt)
		shardLeases, runs = append(shardLeases, sl), append(runs, sl.lease.Run)
	}
	var jobs []LeasedDelivery
	var errs []error
	heads := map[Queue]int64{}
	for i, cmd := range l.cfg.Scripts.RunNow(ctx, runs...) {
		if cmd.Err() != nil {
			// Not leased, as far as this worker knows: the local hint's ids of it are due again.
			for k, tk := range shardLeases[i].takes {
				if tk.Local {
					l.cfg.Local.PutBack(tk.Shard, tk.ID, shardLeases[i].lease.Queues[k].IDs, 0)
				}
			}
		}
		got, h, err := l.leased(ctx, shardLeases[i], cmd)
		jobs, errs = append(jobs, got...), append(errs, err)
		maps.Copy(heads, h)
	}
	l.cfg.Flights.GiveBack(jobs, reserved)
	return jobs, heads, errors.Join(errs...)
}

// candidates returns the ids of up to t.n due deliveries of each take's queue — a local take's from
// the local hint (LocalDue), the others' read in one round trip, with the rate limiter of each
// rate-limited webhook among them (its TAT, "" when none).
func (l *Leaser) candidates(ctx context.Context, now time.Time, takes []Take, t *dueTargets) ([][]string, map[string]string, error) {
	local := make([][]string, len(takes))
	reads := make([]*rdb.QueueRead, len(takes))
	var rated []string
	seen := map[string]bool{}
	for i, tk := range takes {
		if tk.Local {
			local[i] = l.cfg.Local.Take(tk.Shard, tk.ID, tk.N)
		} else {
			reads[i] = &rdb.QueueRead{Shard: tk.Shard, Webhook: tk.ID, N: tk.N}
		}
		if wh := t.webhooks[tk.ID]; wh != nil && wh.RateLimit > 0 && !seen[tk.ID] {
			seen[tk.ID] = true
			rated = append(rated, tk.ID)
		}
	}
	var ids [][]string
	var tats map[string]string
	err := timedRead("the queues", func() (err error) {
		ids, tats, err = rdb.ReadQueues(ctx, l.cfg.Redis, l.cfg.Keys, reads, rated, now.UnixMilli())
		return err
	})
	if err != nil {
		for i, tk := range takes {
			if tk.Local {
				l.cfg.Local.PutBack(tk.Shard, tk.ID, local[i], 0)
			}
		}
		return nil, nil, fmt.Errorf("webhooks: read queues: %w", err)
	}
	for i, r := range reads {
		if r == nil {
			ids[i] = local[i]
		} else {
			l.cfg.Local.Forget(r.Shard, r.Webhook, ids[i]) // leased now: a hint of them is stale
		}
	}
	return ids, tats, nil
}

// shardLease is the lease of some webhooks' candidates in one shard (rdb.ShardLease), and the takes
// they are of, one per queue of the lease.
type shardLease struct {
	now   time.Time
	takes []Take
	lease *rdb.ShardLease
}

// newShardLease prepares the lease of the candidates of some webhooks of one shard; the webhooks
// flagged in retime have their ready score set to their queue's head.
func (l *Leaser) newShardLease(shard int, now time.Time, takes []Take, ids [][]string, retime []bool) *shardLease {
	queues := make([]rdb.LeaseQueue, len(takes))
	for i, t := range takes {
		queues[i] = rdb.LeaseQueue{Webhook: t.ID, IDs: ids[i], Retime: retime[i]}
	}
	return &shardLease{now: now, takes: takes, lease: rdb.NewShardLease(l.cfg.Keys, shard, now, l.cfg.Lease, queues, rdb.NewToken)}
}

// leased reads a shard lease's reply: the deliveries it leased, their records decoded, and the new
// ready scores of the webhooks it retimed (0 when one left the ready zset).
func (l *Leaser) leased(ctx context.Context, sl *shardLease, cmd *redis.Cmd) ([]LeasedDelivery, map[Queue]int64, error) {
	shard := sl.lease.Shard
	results, retimed, err := sl.lease.Reply(cmd)
	if err != nil {
		return nil, nil, fmt.Errorf("webhooks: lease shard %d: %w", shard, err)
	}
	heads := make(map[Queue]int64, len(retimed))
	for id, head := range retimed {
		heads[Queue{Shard: shard, Webhook: id}] = head
	}
	var out []LeasedDelivery
	var errs []error
	for j, c := range sl.lease.Candidates {
		t := sl.takes[c.Queue]
		rec := &rdb.Record{Delivery: types.Delivery{ID: c.ID, WebhookID: t.ID}, Token: c.Token}
		switch r := results[j]; {
		case r.Leased:
			rec, err := l.decodeLeased(ctx, shard, rec, r.Record)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rec.HoldLease(c.Token, sl.now.Add(l.cfg.Lease))
			out = append(out, LeasedDelivery{Shard: shard, Rec: rec, Probe: t.Probe, Retime: sl.lease.Queues[c.Queue].Retime})
		case r.NotRecord:
			err := fmt.Errorf("%w: %s is not a record", types.ErrCorruptRecord, c.ID)
			l.cfg.Log.Error("webhooks: dropped undecodable delivery from the schedule", "delivery_id", c.ID, "error", err)
			errs = append(errs, err)
		}
	}
	return out, heads, errors.Join(errs...)
}

// decodeLeased decodes a record just leased; one that cannot be decoded, or is not pending, is taken
// off its queue (rdb.UnscheduleLeased) and reported.
func (l *Leaser) decodeLeased(ctx context.Context, shard int, c *rdb.Record, raw string) (*rdb.Record, error) {
	rec, err := rdb.ParseRecord(c.ID, raw)
	if err == nil && rec.Status != types.StatusPending {
		err = fmt.Errorf("%w: %s is scheduled but %s", types.ErrCorruptRecord, c.ID, rec.Status)
	}
	if err == nil {
		return rec, nil
	}
	l.cfg.Log.Error("webhooks: skipping undecodable delivery", "delivery_id", c.ID, "error", err)
	if uerr := rdb.UnscheduleLeased(ctx, l.cfg.Redis, l.cfg.Keys, shard, c.WebhookID, c.ID, c.Token); uerr != nil {
		err = errors.Join(err, fmt.Errorf("webhooks: unschedule %s: %w", c.ID, uerr))
	}
	return nil, err
}
