package worker

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// chooseTakes shares free worker slots among the webhooks found due, one slot at a time in turn, so a
// webhook with a large backlog gets no more than its share while others have deliveries due. With
// fewer slots than webhooks due, the turns go round the webhooks by id from where the last such pass
// stopped (Turns), so the webhooks a pass leaves out are served first by the next. Each webhook's share
// is bounded by its room under its in-flight limit (InFlight) and by its circuit (none while open, one probe
// when the open period has ended; a webhook waiting for its probe is parked); leaseTakes then reserves
// the room and the rate-limit slots. The circuits of every webhook found due are read at once (cached,
// one HMGET for those not cached). Webhooks whose stored JSON is broken are left leased to nobody and
// logged.
func (l *Leaser) chooseTakes(ctx context.Context, now time.Time, due []Due, t *dueTargets, free int) []Take {
	shards := map[string][]Due{}
	var order []string
	for _, w := range due {
		if shards[w.ID] == nil {
			order = append(order, w.ID)
		}
		shards[w.ID] = append(shards[w.ID], w)
	}
	var wants []Want
	circuits := l.cfg.Breaker.Circuits(ctx, order)
	for i, id := range order {
		if err := t.broken[id]; err != nil {
			l.cfg.Log.Error("webhooks: webhook cannot be decoded: its deliveries wait", "webhook_id", id, "error", err)
			continue
		}
		room := l.cfg.Flights.Room(id)
		if room <= 0 {
			continue // at its in-flight limit: an ending attempt wakes the worker
		}
		probe := ""
		wh := t.webhooks[id]
		if wh != nil && wh.MaxConcurrency > 0 {
			room = min(room, wh.MaxConcurrency) // more would only go back to wait for a slot
		}
		// A deleted or disabled webhook's deliveries are taken whatever its circuit says: they fail
		// (Refuse), and must not wait parked for a probe that never comes.
		if h := circuits[i]; h.State != types.CircuitClosed && wh != nil && !wh.Disabled {
			tok, ok := l.cfg.Breaker.TryProbe(ctx, id, now, h)
			if !ok {
				l.park(ctx, shards[id], types.Later(h.OpenUntil, now.Add(breaker.ProbeRecheck)))
				// The probe's holder may have given it back meanwhile, its delivery handed back (due at
				// once) before the park landed: then the park would hold that delivery a breaker.ProbeRecheck.
				// Tried again after the park, the probe is either ours now or still held, and its
				// holder's release lowers the ready score after the park (ReleaseProbe).
				if tok, ok = l.cfg.Breaker.TryProbe(ctx, id, now, h); !ok {
					continue
				}
			}
			room, probe = 1, tok
		}
		wants = append(wants, Want{ID: id, Room: room, Probe: probe})
	}
	wants = l.turns.Order(wants, free)
	rooms := make([]int, len(wants))
	for i, w := range wants {
		rooms[i] = w.Room
	}
	alloc := Share(rooms, free)
	var takes []Take
	for i, w := range wants {
		if alloc[i] == 0 {
			if w.Probe != "" {
				// No slot for it in this pass: a probe kept would hold the webhook's deliveries back
				// for a lease (releaseUnusedProbes sees only the takes).
				l.ReleaseProbe(ctx, w.ID, w.Probe, shardsOf(shards[w.ID])...)
			}
			continue
		}
		for _, dw := range shards[w.ID] {
			takes = append(takes, Take{Due: dw, N: alloc[i], Probe: w.Probe})
		}
	}
	return takes
}

// shardsOf is the shards of ws.
func shardsOf(ws []Due) []int {
	out := make([]int, len(ws))
	for i, w := range ws {
		out[i] = w.Shard
	}
	return out
}

// park moves a webhook's ready score, in every shard it was found due in (due, all of one webhook), to
// until if that is later: nothing of the webhook is taken there before then (a retime may undo it; the
// next worker to see the webhook parks it again), and holds the local hint's ids of it until then. One
// round trip (rdb.Park).
func (l *Leaser) park(ctx context.Context, due []Due, until time.Time) {
	if len(due) == 0 {
		return
	}
	for _, w := range due {
		l.cfg.Local.Delay(w.Shard, w.ID, until.UnixMilli()) // the local hint's ids of it wait as long
	}
	if err := rdb.Park(ctx, l.cfg.Redis, l.cfg.Keys, due[0].ID, shardsOf(due), until); err != nil {
		l.cfg.Log.Warn("webhooks: park webhook", "webhook_id", due[0].ID, "error", err)
	}
}

// releaseUnusedProbes gives back the probes that takes took but whose leases leased nothing
// (ReleaseProbe): a probe held for a pass that sends nothing would hold every delivery of its webhook
// back for a lease.
func (l *Leaser) releaseUnusedProbes(ctx context.Context, takes []Take, jobs []LeasedDelivery) {
	used := map[string]bool{}
	for _, j := range jobs {
		used[j.Probe] = true
	}
	unused := map[string][]int{} // probe -> the shards it was taken for (a webhook due in several has one probe)
	var order []Take
	for _, tk := range takes {
		if tk.Probe == "" || used[tk.Probe] {
			continue
		}
		if unused[tk.Probe] == nil {
			order = append(order, tk)
		}
		unused[tk.Probe] = append(unused[tk.Probe], tk.Shard)
	}
	for _, tk := range order {
		l.ReleaseProbe(ctx, tk.ID, tk.Probe, unused[tk.Probe]...)
	}
}

// ReleaseProbe gives back a webhook's probe that sent nothing (rdb.ReleaseProbe): the next pass may
// take it at once, instead of a lease later. Then it lowers the webhook's ready score to now in shards
// (rdb.Unpark): a worker that found the probe held may have parked the webhook there (chooseTakes), its
// park landing after the delivery was handed back; every park is followed by another try for the
// probe, and every release by this, so the last park is always undone while the probe is free.
func (l *Leaser) ReleaseProbe(ctx context.Context, webhookID, token string, shards ...int) {
	ctx = context.WithoutCancel(ctx)
	if err := l.cfg.Breaker.ReleaseProbe(ctx, webhookID, token); err != nil {
		l.cfg.Log.Warn("webhooks: give back an unused probe", "webhook_id", webhookID, "error", err)
	}
	if len(shards) == 0 {
		return
	}
	if err := rdb.Unpark(ctx, l.cfg.Redis, l.cfg.Keys, webhookID, shards, l.cfg.Now()); err != nil {
		l.cfg.Log.Warn("webhooks: unpark a webhook whose probe was given back", "webhook_id", webhookID, "error", err)
	}
}
