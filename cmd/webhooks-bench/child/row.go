package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/cmd/webhooks-bench/internal/e2e"
)

// row dispatches the events of one phase and checks what came back.
type row struct {
	c    config
	d    *webhooks.Dispatcher
	rcv  *e2e.Receiver
	ctr  *e2e.Counter
	data e2e.EventData
}

// dispatch dispatches one event and tallies its pairs (e2e.Tally); with deferred set, pairs left to
// the worker are counted there.
func (r *row) dispatch(ctx context.Context, id string, wantDup bool, deferred *atomic.Int64) (ok, failed int, err error) {
	results, err := r.d.Dispatch(ctx, webhooks.Event{Type: e2e.EventType, ID: id, Data: r.data})
	if err != nil {
		return 0, r.c.hooks, err
	}
	ok, failed, def, err := e2e.Tally(id, results, r.c.hooks, wantDup, deferred != nil)
	if deferred != nil {
		deferred.Add(int64(def))
	}
	return ok, failed, err
}

// phase dispatches n events from -concurrency goroutines; fresh, it lasts until the receiver has
// answered every pair, those left to the worker included.
func (r *row) phase(ctx context.Context, idPrefix string, n int, wantDup bool) (e2e.PhaseReport, error) {
	pctx, cancel := context.WithTimeout(ctx, r.c.timeout)
	defer cancel()
	var ok, failed, deferred atomic.Int64
	c0, t0 := r.ctr.Read()
	r0, cpu0, start := r.rcv.Count.Load(), e2e.ProcessCPU(), time.Now()
	_, err := e2e.Parallel(pctx, n, r.c.conc, nil, func(ctx context.Context, i int) error {
		o, f, err := r.dispatch(ctx, e2e.EventID(idPrefix, i), wantDup, &deferred)
		ok.Add(int64(o))
		failed.Add(int64(f))
		return err
	})
	if def := deferred.Load(); def > 0 && err == nil {
		err = waitFor(pctx, func() bool { return r.rcv.Count.Load()-r0 >= ok.Load()+def })
		if err == nil {
			ok.Add(def)
		} else {
			failed.Add(def)
		}
	}
	elapsed, cpu := time.Since(start), e2e.ProcessCPU()-cpu0
	c1, t1 := r.ctr.Read()
	return e2e.PhaseReport{ElapsedNS: elapsed.Nanoseconds(), OK: int(ok.Load()), Failed: int(failed.Load()),
		Deferred: int(deferred.Load()), Received: r.rcv.Count.Load() - r0, CPUNS: cpu.Nanoseconds(),
		Cmds: c1 - c0, Trips: t1 - t0}, err
}

// lone is the round trips of one Dispatch made alone (no concurrent caller to batch with), fresh then
// duplicate, over 100 of each in sequence.
func (r *row) lone(ctx context.Context) ([2]float64, error) {
	const n = 100
	var trips [2]float64
	for pass, wantDup := range []bool{false, true} {
		_, t0 := r.ctr.Read()
		for i := range n {
			if _, f, err := r.dispatch(ctx, e2e.EventID(r.c.prefix+"-lone", i), wantDup, nil); f > 0 {
				return trips, fmt.Errorf("lone Dispatch: %w", err)
			}
		}
		_, t1 := r.ctr.Read()
		trips[pass] = float64(t1-t0) / n
	}
	return trips, nil
}

// waitFor polls cond every millisecond until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
