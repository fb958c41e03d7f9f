package webhooks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/smartdrop/webhooks/internal/ratelimit"
	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks/internal/worker"
)

// chooseTakes shares free worker slots among the webhooks found due, one slot at a time in turn, so a
// webhook with a large backlog gets no more than its share while others have deliveries due. With
// fewer slots than webhooks due, the turns go round the webhooks by id from where the last such pass
// stopped (Dispatcher.turns), so the webhooks a pass leaves out are served first by the next. Each
// webhook's share is bounded by its room under MaxInFlightPerWebhook and by its circuit (none while
// open, one probe when the open period has ended; a webhook waiting for its probe is parked);
// leaseTakes then reserves the room and the rate-limit slots. The circuits of every webhook found due
// are read at once (cached, one HMGET for those not cached). Webhooks whose stored JSON is broken are
// left leased to nobody and logged.
func (d *Dispatcher) chooseTakes(ctx context.Context, now time.Time, due []worker.Due, t *dueTargets, free int) []worker.Take {
	shards := map[string][]worker.Due{}
	var order []string
	for _, w := range due {
		if shards[w.ID] == nil {
			order = append(order, w.ID)
		}
		shards[w.ID] = append(shards[w.ID], w)
	}
	var wants []worker.Want
	circuits := d.breaker.Circuits(ctx, order)
	for _, id := range order {
		if err := t.broken[id]; err != nil {
			d.log.Error("webhooks: webhook cannot be decoded: its deliveries wait", "webhook_id", id, "error", err)
			continue
		}
		room := d.flights.Room(id)
		if room <= 0 {
			continue // at its cap: an ending attempt wakes the worker
		}
		probe := ""
		wh := t.webhooks[id]
		if wh != nil && wh.MaxConcurrency > 0 {
			room = min(room, wh.MaxConcurrency) // more would only go back to wait for a slot
		}
		// A deleted or disabled webhook's deliveries are taken whatever its circuit says: they fail
		// (worker.Refuse), and must not wait parked for a probe that never comes.
		if h := circuits[id]; h.State != CircuitClosed && wh != nil && !wh.Disabled {
			tok, ok := d.breaker.TryProbe(ctx, id, now, h)
			if !ok {
				d.park(ctx, shards[id], later(h.OpenUntil, now.Add(probeRecheck)))
				// The probe's holder may have given it back meanwhile, its delivery handed back (due at
				// once) before the park landed: then the park would hold that delivery a probeRecheck.
				// Tried again after the park, the probe is either ours now or still held, and its
				// holder's release lowers the ready score after the park (releaseProbe).
				if tok, ok = d.breaker.TryProbe(ctx, id, now, h); !ok {
					continue
				}
			}
			room, probe = 1, tok
		}
		wants = append(wants, worker.Want{ID: id, Room: room, Probe: probe})
	}
	wants = d.turns.Order(wants, free)
	rooms := make([]int, len(wants))
	for i, w := range wants {
		rooms[i] = w.Room
	}
	alloc := worker.Share(rooms, free)
	var takes []worker.Take
	for i, w := range wants {
		if alloc[i] == 0 {
			if w.Probe != "" {
				// No slot for it in this pass: a probe kept would hold the webhook's deliveries back
				// for a lease (releaseUnusedProbes sees only the takes).
				d.releaseProbe(ctx, w.ID, w.Probe, shardsOf(shards[w.ID])...)
			}
			continue
		}
		for _, dw := range shards[w.ID] {
			takes = append(takes, worker.Take{Due: dw, N: alloc[i], Probe: w.Probe})
		}
	}
	return takes
}

// shardsOf is the shards of ws.
func shardsOf(ws []worker.Due) []int {
	out := make([]int, len(ws))
	for i, w := range ws {
		out[i] = w.Shard
	}
	return out
}

// reserve takes, for the due ids read of one webhook, its in-flight slots, no more than its rate
// limit has free within rateHorizon (counted from the limiter's TAT read with the candidates), and
// returns how many of them may be leased. A webhook with no free rate slot is parked until it has one:
// then it returns that time too.
func (d *Dispatcher) reserve(ctx context.Context, now time.Time, wh *storedWebhook, id, tat string, want int, due []worker.Due) (int, time.Time) {
	var parked time.Time
	if wh != nil && wh.RateLimit > 0 {
		free, wait := ratelimit.Free(tat, now, wh.RateLimit, rateHorizon)
		if free == 0 {
			parked = now.Add(max(wait, worker.MinWait))
			d.park(ctx, due, parked)
		}
		want = min(want, free)
	}
	return d.flights.Take(id, want), parked
}

// leaseTakes reads the due ids of each take's queue, reserves in-flight slots for them within the
// webhook's free rate slots (reserve), and leases them, each shard in one script (the shards' scripts
// go out together). A webhook due in several shards gets no more than its share in all. It returns the
// leased deliveries, the new ready scores of the webhooks it retimed (leaseShard), and the errors.
// Slots reserved for what was not leased are given back.
func (d *Dispatcher) leaseTakes(ctx context.Context, now time.Time, takes []worker.Take, t *dueTargets) ([]worker.LeasedDelivery, map[worker.Queue]int64, error) {
	ids, tats, err := d.candidates(ctx, now, takes, t)
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
		due := make([]worker.Due, len(idx))
		for k, i := range idx {
			due[k] = takes[i].Due
		}
		n, until := d.reserve(ctx, now, t.webhooks[id], id, tats[id], read[id], due)
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
			d.local.PutBack(tk.Shard, tk.ID, hinted[i][len(ids[i]):], rdb.UnixMilli(parked[tk.ID]))
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
		st, sids, rt := make([]worker.Take, len(idx)), make([][]string, len(idx)), make([]bool, len(idx))
		for k, i := range idx {
			st[k], sids[k], rt[k] = takes[i], ids[i], retime[i]
		}
		l := d.newShardLease(shard, now, st, sids, rt)
		shardLeases, runs = append(shardLeases, l), append(runs, l.lease.Run)
	}
	var jobs []worker.LeasedDelivery
	var errs []error
	heads := map[worker.Queue]int64{}
	for i, cmd := range d.scripts.RunNow(ctx, runs...) {
		if cmd.Err() != nil {
			// Not leased, as far as this worker knows: the local hint's ids of it are due again.
			for k, tk := range shardLeases[i].takes {
				if tk.Local {
					d.local.PutBack(tk.Shard, tk.ID, shardLeases[i].lease.Queues[k].IDs, 0)
				}
			}
		}
		got, h, err := d.leased(ctx, shardLeases[i], cmd)
		jobs, errs = append(jobs, got...), append(errs, err)
		maps.Copy(heads, h)
	}
	d.flights.GiveBack(jobs, reserved)
	return jobs, heads, errors.Join(errs...)
}

// candidates returns the ids of up to t.n due deliveries of each take's queue — a local take's from
// the local hint (worker.LocalDue), the others' read in one round trip, with the rate limiter of each
// rate-limited webhook among them (its TAT, "" when none).
func (d *Dispatcher) candidates(ctx context.Context, now time.Time, takes []worker.Take, t *dueTargets) ([][]string, map[string]string, error) {
	local := make([][]string, len(takes))
	reads := make([]*rdb.QueueRead, len(takes))
	var rated []string
	seen := map[string]bool{}
	for i, tk := range takes {
		if tk.Local {
			local[i] = d.local.Take(tk.Shard, tk.ID, tk.N)
		} else {
			reads[i] = &rdb.QueueRead{Shard: tk.Shard, Webhook: tk.ID, N: tk.N}
		}
		if wh := t.webhooks[tk.ID]; wh != nil && wh.RateLimit > 0 && !seen[tk.ID] {
			seen[tk.ID] = true
			rated = append(rated, tk.ID)
		}
	}
	ids, tats, err := rdb.ReadQueues(ctx, d.rdb, d.keys, reads, rated, now.UnixMilli())
	if err != nil {
		for i, tk := range takes {
			if tk.Local {
				d.local.PutBack(tk.Shard, tk.ID, local[i], 0)
			}
		}
		return nil, nil, fmt.Errorf("webhooks: read queues: %w", err)
	}
	for i, r := range reads {
		if r == nil {
			ids[i] = local[i]
		} else {
			d.local.Forget(r.Shard, r.Webhook, ids[i]) // leased now: a hint of them is stale
		}
	}
	return ids, tats, nil
}

// shardLease is the lease of some webhooks' candidates in one shard (rdb.ShardLease), and the takes
// they are of, one per queue of the lease.
type shardLease struct {
	now   time.Time
	takes []worker.Take
	lease *rdb.ShardLease
}

// newShardLease prepares the lease of the candidates of some webhooks of one shard; the webhooks
// flagged in retime have their ready score set to their queue's head.
func (d *Dispatcher) newShardLease(shard int, now time.Time, takes []worker.Take, ids [][]string, retime []bool) *shardLease {
	queues := make([]rdb.LeaseQueue, len(takes))
	for i, t := range takes {
		queues[i] = rdb.LeaseQueue{Webhook: t.ID, IDs: ids[i], Retime: retime[i]}
	}
	return &shardLease{now: now, takes: takes, lease: rdb.NewShardLease(d.keys, shard, now, d.lease, queues, rdb.NewToken)}
}

// leased reads a shard lease's reply: the deliveries it leased, their records decoded, and the new ready scores of the webhooks it retimed (0 when one left the ready zset).
func (d *Dispatcher) leased(ctx context.Context, l *shardLease, cmd *redis.Cmd) ([]worker.LeasedDelivery, map[worker.Queue]int64, error) {
	shard := l.lease.Shard
	results, retimed, err := l.lease.Reply(cmd)
	if err != nil {
		return nil, nil, fmt.Errorf("webhooks: lease shard %d: %w", shard, err)
	}
	heads := make(map[worker.Queue]int64, len(retimed))
	for id, head := range retimed {
		heads[worker.Queue{Shard: shard, Webhook: id}] = head
	}
	var out []worker.LeasedDelivery
	var errs []error
	for j, c := range l.lease.Candidates {
		t := l.takes[c.Queue]
		rec := &rdb.Record{Delivery: Delivery{ID: c.ID, WebhookID: t.ID}, Token: c.Token}
		switch r := results[j]; {
		case r.Leased:
			rec, err := d.decodeLeased(ctx, shard, rec, r.Record)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rec.HoldLease(c.Token, l.now.Add(d.lease))
			out = append(out, worker.LeasedDelivery{Shard: shard, Rec: rec, Probe: t.Probe, Retime: l.lease.Queues[c.Queue].Retime})
		case r.NotRecord:
			err := fmt.Errorf("%w: %s is not a record", ErrCorruptRecord, c.ID)
			d.log.Error("webhooks: dropped undecodable delivery from the schedule", "delivery_id", c.ID, "error", err)
			errs = append(errs, err)
		}
	}
	return out, heads, errors.Join(errs...)
}

// decodeLeased decodes a record just leased; one that cannot be decoded, or is not pending, is taken
// off its queue and reported.
func (d *Dispatcher) decodeLeased(ctx context.Context, shard int, c *rdb.Record, raw string) (*rdb.Record, error) {
	rec, err := rdb.ParseRecord(c.ID, raw)
	if err == nil && rec.Status != StatusPending {
		err = fmt.Errorf("%w: %s is scheduled but %s", ErrCorruptRecord, c.ID, rec.Status)
	}
	if err == nil {
		return rec, nil
	}
	d.log.Error("webhooks: skipping undecodable delivery", "delivery_id", c.ID, "error", err)
	keys := []string{d.keys.Ready(shard), d.keys.Queue(shard, c.WebhookID), d.keys.Delivery(shard, c.ID)}
	if _, uerr := rdb.Unschedule.Run(ctx, d.rdb, keys, c.ID, c.Token, c.WebhookID).Result(); uerr != nil {
		err = errors.Join(err, fmt.Errorf("webhooks: unschedule %s: %w", c.ID, uerr))
	}
	return nil, err
}
