package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"

	"github.com/smartdrop/webhooks/cmd/webhooks-bench/internal/e2e"
)

// phaseOut is what one timed phase of one system measured.
type phaseOut struct {
	elapsed  time.Duration // first call to last return
	ok       int           // deliveries made (fresh) or duplicate pairs rejected (duplicate phase)
	failed   int
	firstErr error
	d        delta // Redis server counters, and CPU, over the phase
	cmds     int64 // client commands (hook)
	trips    int64 // round trips (hook)
	received int64 // requests the receiver got
	// childSec is the CPU time of the child process that ran the phase (child rows only): the
	// library, its driver and its receiver; the parent's own CPU is in d.selfSec.
	childSec float64
	deferred int // fresh pairs Dispatch left to the worker (child rows; the in-process row keeps result.deferred)
	// leftReady are the ready entries the phase left, not yet due (the Enqueue row: waitScheduleClean)
	leftReady int64
}

// result is one system's figures of one run.
type result struct {
	system     string
	events     int
	pairs      int // events × webhooks
	fresh, dup phaseOut
	memUsage   int64 // MEMORY USAGE sum over the system's keys after the fresh phase
	memByKind  map[string]int64
	retained   int // deliveries retained then (warm-up included)
	keys       int
	hasRedis   bool
	// loneTrips are the round trips of one Dispatch made alone (no concurrent caller to batch with):
	// fresh, then duplicate. Library only.
	loneTrips [2]float64
	eng       *engineResult // the engine scenarios (sysEngine only)
	// deferred are the fresh pairs whose first attempt Dispatch left to the worker replica
	// (their webhook at its in-flight limit in the Dispatcher), delivered by it within the phase.
	// Library only.
	deferred int
}

// phase times body and takes the Redis, hook, receiver and CPU counters around it.
func (e *env) phase(ctx context.Context, label string, ctr *e2e.Counter, total int,
	body func(ctx context.Context, done *atomic.Int64) (ok, failed int, err error)) (phaseOut, error) {
	pctx, cancel := context.WithTimeout(ctx, e.cfg.phaseTimeout)
	defer cancel()
	var done atomic.Int64
	e.prog.set(label, &done, total)
	a, err := takeSnapshot(ctx, e.admin)
	if err != nil {
		return phaseOut{}, err
	}
	var c0, t0 int64
	if ctr != nil {
		c0, t0 = ctr.Read()
	}
	r0 := e.rcv.Count.Load()
	start := time.Now()
	var out phaseOut
	e.untimed, e.polls, e.leftReady = 0, nil, 0
	out.ok, out.failed, out.firstErr = body(pctx, &done)
	out.leftReady = e.leftReady
	out.elapsed = time.Since(start) - e.untimed
	out.received = e.rcv.Count.Load() - r0
	if ctr != nil {
		c1, t1 := ctr.Read()
		out.cmds, out.trips = c1-c0, t1-t0
	}
	b, err := takeSnapshot(ctx, e.admin)
	if err != nil {
		return out, err
	}
	out.d = diff(a, b)
	for name, n := range e.polls {
		n = min(n, out.d.byCmd[name])
		out.d.byCmd[name] -= n
		out.d.cmds -= n
	}
	if pctx.Err() != nil {
		return out, fmt.Errorf("%s: not finished within %s (%d/%d)", label, e.cfg.phaseTimeout, done.Load(), total)
	}
	return out, nil
}

// afterFresh measures what the system retains, before anything is deleted.
func (e *env) afterFresh(ctx context.Context, res *result, pattern, prefix string, retained int) error {
	e.prog.set("MEMORY USAGE of "+pattern, nil, 0)
	mu, byKind, n, err := memoryUsage(ctx, e.admin, pattern, prefix)
	if err != nil {
		return fmt.Errorf("MEMORY USAGE: %w", err)
	}
	res.memUsage, res.memByKind, res.keys, res.retained, res.hasRedis = mu, byKind, n, retained, true
	return nil
}

// sequence runs the phases of a row: warm-up, fresh, what it retains then, duplicates.
func (e *env) sequence(ctx context.Context, res *result, label, prefix, pattern string,
	phase func(label, idPrefix string, n int, wantDup bool) (phaseOut, error)) error {
	cfg := e.cfg
	if _, err := phase(label+" warm-up", prefix+"-warm", e.warmups(), false); err != nil {
		return err
	}
	var err error
	if res.fresh, err = phase(label+" fresh", prefix+"-evt-", cfg.events, false); err != nil {
		return err
	}
	if err := e.afterFresh(ctx, res, pattern, prefix, (cfg.events+e.warmups())*cfg.webhooks); err != nil {
		return err
	}
	res.dup, err = phase(label+" duplicates", prefix+"-evt-", cfg.events, true)
	return err
}

func (e *env) cleanup(pattern string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e.prog.set("deleting "+pattern, nil, 0)
	_, _ = deleteKeys(ctx, e.admin, pattern)
}

func (e *env) warmups() int { return 2 * e.cfg.concurrency }

// runLibrary measures this library: Dispatch of every event from -concurrency goroutines.
func runLibrary(ctx context.Context, e *env, run int, _ *http.Client) (result, error) {
	cfg := e.cfg
	prefix := fmt.Sprintf("%s%dl", e.prefix, run)
	pattern := "{" + prefix + ":*"
	defer e.cleanup(pattern)
	res := result{events: cfg.events, pairs: cfg.events * cfg.webhooks}

	rdb, ctr := newClient(cfg)
	defer rdb.Close()
	opts := webhooks.Options{KeyPrefix: prefix, AllowPrivateNetworks: true, Retention: cfg.retention}
	d, err := webhooks.New(rdb, opts)
	if err != nil {
		return res, err
	}
	defer d.CloseIdleConnections() // no keep-alive connection of this row outlives it
	if err := e2e.Subscribe(ctx, d, e.rcv); err != nil {
		return res, err
	}

	// dispatch dispatches one event and counts its pairs that went as wanted. A fresh pair whose
	// attempt Dispatch left to the worker (its webhook at its in-flight limit in this Dispatcher) is
	// counted in deferred: the worker replica delivers it, and the phase waits for that.
	var deferred atomic.Int64
	dispatch := func(ctx context.Context, id string, wantDup bool) (ok, failed int, err error) {
		results, err := d.Dispatch(ctx, webhooks.Event{Type: e2e.EventType, ID: id, Data: e.data})
		if err != nil {
			return 0, cfg.webhooks, err
		}
		ok, failed, def, err := e2e.Tally(id, results, cfg.webhooks, wantDup, cfg.worker)
		deferred.Add(int64(def))
		return ok, failed, err
	}
	phase := func(label, idPrefix string, n int, wantDup bool) (phaseOut, error) {
		return e.phase(ctx, label, ctr, n, func(ctx context.Context, done *atomic.Int64) (int, int, error) {
			var ok, failed atomic.Int64
			r0, d0 := e.rcv.Count.Load(), deferred.Load()
			_, err := e2e.Parallel(ctx, n, cfg.concurrency, done, func(ctx context.Context, i int) error {
				o, f, err := dispatch(ctx, e2e.EventID(idPrefix, i), wantDup)
				ok.Add(int64(o))
				failed.Add(int64(f))
				return err
			})
			if def := deferred.Load() - d0; def > 0 && err == nil {
				// Deferred pairs count once the receiver has answered every pair.
				want := ok.Load() + def
				if _, err := waitCount(ctx, func() int64 { return e.rcv.Count.Load() - r0 }, want); err != nil {
					return int(ok.Load()), int(failed.Load() + def), err
				}
				ok.Add(def)
			}
			return int(ok.Load()), int(failed.Load()), err
		})
	}

	label := fmt.Sprintf("run %d/%d webhooks", run, cfg.runs)
	stopWorker := func() {}
	if cfg.worker {
		// A replica's retry worker, on its own client: its Redis commands count in the server's
		// commandstats, not in the round trips of Dispatch.
		var err error
		if stopWorker, err = e2e.StartReplica(ctx, cfg.redisAddr, cfg.pool, opts); err != nil {
			return res, err
		}
	}
	if _, err := phase(label+" warm-up", prefix+"-warm", e.warmups(), false); err != nil {
		stopWorker()
		return res, err
	}
	def0 := deferred.Load()
	res.fresh, err = phase(label+" fresh", prefix+"-evt-", cfg.events, false)
	res.deferred = int(deferred.Load() - def0)
	stopWorker()
	if err != nil {
		return res, err
	}
	if err := e.afterFresh(ctx, &res, pattern, prefix, (cfg.events+e.warmups())*cfg.webhooks); err != nil {
		return res, err
	}
	if res.dup, err = phase(label+" duplicates", prefix+"-evt-", cfg.events, true); err != nil {
		return res, err
	}

	// Round trips of one Dispatch alone: under concurrency the library coalesces the script calls of
	// concurrent Dispatches into pipelines, so the figures above are amortised. One caller, in sequence:
	e.prog.set(label+" round trips of a lone Dispatch", nil, 0)
	const lone = 100
	for pass, wantDup := range []bool{false, true} {
		_, t0 := ctr.Read()
		for i := range lone {
			if _, f, err := dispatch(ctx, e2e.EventID(prefix+"-lone", i), wantDup); f > 0 {
				return res, fmt.Errorf("lone Dispatch: %w", err)
			}
		}
		_, t1 := ctr.Read()
		res.loneTrips[pass] = float64(t1-t0) / lone
	}
	return res, nil
}

// runHandWritten measures the loop a user writes by hand: per (webhook, event), SET claim NX PX; on a
// win, POST the signed request, then HSET the record and PEXPIRE it in one MULTI/EXEC. No durable
// schedule: a crash between the claim and the record loses the delivery.
func runHandWritten(ctx context.Context, e *env, run int, hc *http.Client) (result, error) {
	cfg := e.cfg
	prefix := fmt.Sprintf("%s%dh", e.prefix, run)
	pattern := prefix + ":*"
	defer e.cleanup(pattern)
	res := result{events: cfg.events, pairs: cfg.events * cfg.webhooks}
	rdb, ctr := newClient(cfg)
	defer rdb.Close()
	hooks := newBaselineHooks(e.rcv)

	// deliver is the whole hand-written dispatcher.
	deliver := func(ctx context.Context, evtID string) (sent, skipped, failed int, firstErr error) {
		body, err := json.Marshal(wireEvent{ID: evtID, Type: e2e.EventType, Timestamp: time.Now().UTC(), Data: e.data})
		if err != nil {
			return 0, 0, len(hooks), err
		}
		for i := range hooks {
			h := &hooks[i]
			won, err := rdb.SetNX(ctx, prefix+":claim:"+h.id+":"+evtID, 1, cfg.retention).Result()
			if err != nil {
				return sent, skipped, failed + 1, err
			}
			if !won {
				skipped++
				continue
			}
			start := time.Now()
			code, perr := post(ctx, hc, h, "msg_"+h.id+"_"+evtID, body)
			status, lastErr := "success", ""
			if perr != nil || code < 200 || code > 299 {
				status, lastErr = "failed", fmt.Sprint(code, perr)
			}
			rec := prefix + ":dlv:" + h.id + ":" + evtID
			_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.HSet(ctx, rec, "webhook_id", h.id, "event_id", evtID, "event_type", e2e.EventType, "status", status,
					"attempts", 1, "status_code", code, "error", lastErr, "created_at", start.UnixMilli(),
					"duration_us", time.Since(start).Microseconds())
				p.PExpire(ctx, rec, cfg.retention)
				return nil
			})
			if err != nil || status != "success" {
				failed++
				if err == nil {
					err = errors.New(lastErr)
				}
				firstErr = cmp.Or(firstErr, err)
				continue
			}
			sent++
		}
		return sent, skipped, failed, firstErr
	}
	phase := func(label, idPrefix string, n int, wantDup bool) (phaseOut, error) {
		return e.phase(ctx, label, ctr, n, func(ctx context.Context, done *atomic.Int64) (int, int, error) {
			var ok, failed atomic.Int64
			_, err := e2e.Parallel(ctx, n, cfg.concurrency, done, func(ctx context.Context, i int) error {
				s, k, f, err := deliver(ctx, e2e.EventID(idPrefix, i))
				if wantDup {
					ok.Add(int64(k))
					failed.Add(int64(s + f))
				} else {
					ok.Add(int64(s))
					failed.Add(int64(k + f))
				}
				return err
			})
			return int(ok.Load()), int(failed.Load()), err
		})
	}
	err := e.sequence(ctx, &res, fmt.Sprintf("run %d/%d hand-written", run, cfg.runs), prefix, pattern, phase)
	return res, err
}

// runHTTPOnly sends the same signed POSTs with no Redis at all.
func runHTTPOnly(ctx context.Context, e *env, run int, hc *http.Client) (result, error) {
	cfg := e.cfg
	res := result{events: cfg.events, pairs: cfg.events * cfg.webhooks}
	hooks := newBaselineHooks(e.rcv)
	phase := func(label, idPrefix string, n int) (phaseOut, error) {
		return e.phase(ctx, label, nil, n, func(ctx context.Context, done *atomic.Int64) (int, int, error) {
			var ok, failed atomic.Int64
			_, err := e2e.Parallel(ctx, n, cfg.concurrency, done, func(ctx context.Context, i int) error {
				evtID := idPrefix + strconv.Itoa(i)
				body, err := json.Marshal(wireEvent{ID: evtID, Type: e2e.EventType, Timestamp: time.Now().UTC(), Data: e.data})
				if err != nil {
					return err
				}
				var first error
				for j := range hooks {
					code, err := post(ctx, hc, &hooks[j], "msg_"+hooks[j].id+"_"+evtID, body)
					if err != nil || code != http.StatusNoContent {
						failed.Add(1)
						first = cmpErr(first, err, code)
						continue
					}
					ok.Add(1)
				}
				return first
			})
			return int(ok.Load()), int(failed.Load()), err
		})
	}
	label := fmt.Sprintf("run %d/%d loopback HTTP", run, cfg.runs)
	if _, err := phase(label+" warm-up", e.prefix+"-warm", e.warmups()); err != nil {
		return res, err
	}
	var err error
	res.fresh, err = phase(label, e.prefix+"-evt-", cfg.events)
	return res, err
}

func cmpErr(first, err error, code int) error {
	if first != nil {
		return first
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("HTTP %d", code)
}
