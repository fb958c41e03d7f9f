package main

// The Enqueue + worker row: Enqueue from -concurrency goroutines with one Run of the same Dispatcher
// delivering, compared run by run with the inline Dispatch row.

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/cmd/webhooks-bench/internal/e2e"
	"github.com/smartdrop/webhooks/internal/rdb"
)

// runEnqueue measures Enqueue from -concurrency goroutines with one Run of the same Dispatcher
// delivering: deliveries/s from the first Enqueue until every pair is delivered and recorded (the
// receiver has answered them all and Run, stopped then, has recorded its attempts in flight).
func runEnqueue(ctx context.Context, e *env, run int, _ *http.Client) (result, error) {
	cfg := e.cfg
	prefix := fmt.Sprintf("%s%dq", e.prefix, run)
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
	wctx, stopRun := context.WithCancel(ctx)
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = d.Run(wctx) }()
	stopWorker := func() {
		stopRun()
		select {
		case <-runDone:
		case <-time.After(30 * time.Second):
		}
	}
	defer stopWorker()

	enqueue := func(ctx context.Context, id string, wantDup bool) (ok, failed int, err error) {
		results, err := d.Enqueue(ctx, webhooks.Event{Type: e2e.EventType, ID: id, Data: e.data})
		if err != nil {
			return 0, cfg.webhooks, err
		}
		for _, r := range results {
			switch {
			case r.Err != nil || r.Delivery == nil:
				failed++
				err = cmpErr(err, r.Err, 0)
			case r.Duplicate == wantDup:
				ok++
			default:
				failed++
				err = fmt.Errorf("event %s webhook %s: duplicate=%t", id, r.WebhookID, r.Duplicate)
			}
		}
		return ok, failed, err
	}
	// phase enqueues n events and, for fresh ones, waits until the receiver has answered every pair.
	phase := func(label, idPrefix string, n int, wantDup bool) (phaseOut, error) {
		return e.phase(ctx, label, ctr, n, func(ctx context.Context, done *atomic.Int64) (int, int, error) {
			r0 := e.rcv.Count.Load()
			var ok, failed atomic.Int64
			_, err := e2e.Parallel(ctx, n, cfg.concurrency, done, func(ctx context.Context, i int) error {
				o, f, err := enqueue(ctx, e2e.EventID(idPrefix, i), wantDup)
				ok.Add(int64(o))
				failed.Add(int64(f))
				return err
			})
			if wantDup || err != nil {
				return int(ok.Load()), int(failed.Load()), err
			}
			if _, err := waitCount(ctx, func() int64 { return e.rcv.Count.Load() - r0 }, ok.Load()); err != nil {
				return 0, int(ok.Load()), err
			}
			// What the worker's leases leave to correct in the schedule (ready entries of queues that
			// emptied) is paid within the phase's commands, not its time.
			if err := e.waitScheduleClean(ctx, prefix); err != nil {
				return 0, int(ok.Load()), err
			}
			return int(ok.Load()), int(failed.Load()), nil
		})
	}
	// The worker goes on running through the duplicate phase (it finds nothing due): an Enqueue that
	// sent something would show in the receiver's count.
	err = e.sequence(ctx, &res, fmt.Sprintf("run %d/%d enqueue+worker", run, cfg.runs), prefix, pattern, phase)
	return res, err
}

// waitScheduleClean waits (at most 30s) until no ready zset of the library's keyspace prefix (its
// DefaultShards shards) holds a due entry — one a worker reads and corrects now — outside the phase's
// time (e.untimed), its own ZCOUNT and ZCARD calls left out of the phase's commands (e.polls). The
// entries left then, due later (the lease end of an attempt since finished: a queue that emptied
// behind a lease), it reports in e.leftReady: each costs a queue read and a retime when it comes due.
func (e *env) waitScheduleClean(ctx context.Context, prefix string) error {
	start := time.Now()
	defer func() { e.untimed += time.Since(start) }()
	if e.polls == nil {
		e.polls = map[string]int64{}
	}
	ks := rdb.KeysOf(prefix, webhooks.DefaultShards)
	keys := make([]string, webhooks.DefaultShards)
	for s := range keys {
		keys[s] = ks.Ready(s)
	}
	for time.Since(start) < 30*time.Second {
		due, left := int64(0), int64(0)
		now := strconv.FormatInt(time.Now().UnixMilli(), 10)
		for _, k := range keys {
			n, err := e.admin.ZCount(ctx, k, "-inf", now).Result()
			e.polls["zcount"]++
			if err != nil {
				return err
			}
			due += n
			m, err := e.admin.ZCard(ctx, k).Result()
			e.polls["zcard"]++
			if err != nil {
				return err
			}
			left += m
		}
		if due == 0 {
			e.leftReady = left
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("the schedule still holds due ready entries 30s after the last delivery")
}
