// Command child is the library's end-to-end row as a program of its own, run by webhooks-bench as a
// child process once per round: -webhooks loopback endpoints in this process, Dispatch of -events
// events from -concurrency goroutines while a second Dispatcher (its own Redis client) runs Run in this
// process, then every event dispatched again (duplicates). It uses only the API that the last v1
// commit (ac27a5b) and today's library share, so webhooks-bench builds it against both (see
// BENCHMARKS.md, "A row built against v1"). It speaks the line protocol of package e2e.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/cmd/webhooks-bench/internal/e2e"
)

type config struct {
	addr, prefix                           string
	events, hooks, payload, conc, pool, wu int
	retention, timeout                     time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.addr, "redis", "127.0.0.1:6379", "Redis address")
	flag.StringVar(&c.prefix, "prefix", "", "KeyPrefix (required)")
	flag.IntVar(&c.events, "events", 5000, "events per phase")
	flag.IntVar(&c.hooks, "webhooks", 4, "webhooks subscribed to every event")
	flag.IntVar(&c.payload, "payload", 512, "bytes of event data")
	flag.IntVar(&c.conc, "concurrency", 64, "goroutines calling Dispatch")
	flag.IntVar(&c.pool, "redis-pool", 128, "go-redis PoolSize")
	flag.IntVar(&c.wu, "warmup", 128, "warm-up events")
	flag.DurationVar(&c.retention, "retention", 7*24*time.Hour, "Options.Retention")
	flag.DurationVar(&c.timeout, "phase-timeout", 2*time.Minute, "bound on every phase")
	flag.Parse()
	if err := run(c); err != nil {
		_ = e2e.Send(os.Stdout, e2e.Message{Error: err.Error()})
		os.Exit(1)
	}
}

func run(c config) error {
	if c.prefix == "" {
		return errors.New("-prefix is required")
	}
	ctx := context.Background()
	rcv, err := e2e.StartReceiver(c.hooks)
	if err != nil {
		return err
	}
	defer rcv.Close()
	rdb, ctr := e2e.NewClient(c.addr, c.pool)
	defer rdb.Close()
	opts := webhooks.Options{KeyPrefix: c.prefix, AllowPrivateNetworks: true, Retention: c.retention}
	d, err := webhooks.New(rdb, opts)
	if err != nil {
		return err
	}
	if err := e2e.Subscribe(ctx, d, rcv); err != nil {
		return err
	}
	stopWorker, err := e2e.StartReplica(ctx, c.addr, c.pool, opts)
	if err != nil {
		return err
	}
	defer stopWorker()
	r := &row{c: c, d: d, rcv: rcv, ctr: ctr, data: e2e.NewEventData(c.payload)}
	in := bufio.NewScanner(os.Stdin)
	if _, err := r.phase(ctx, c.prefix+"-warm", c.wu, false); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	for _, p := range []string{e2e.PhaseFresh, e2e.PhaseDuplicates} {
		if err := e2e.Send(os.Stdout, e2e.Message{Ready: p}); err != nil {
			return err
		}
		if !in.Scan() {
			return errors.New("stdin closed")
		}
		rep, err := r.phase(ctx, c.prefix+"-evt-", c.events, p == e2e.PhaseDuplicates)
		if err != nil {
			rep.Err = err.Error()
		}
		if err := e2e.Send(os.Stdout, e2e.Message{Report: &rep}); err != nil {
			return err
		}
		if p == e2e.PhaseFresh {
			stopWorker() // as the in-process row: the replica runs during the fresh phase only
		}
	}
	done := e2e.Done{Sampled: rcv.Sampled.Load(), BadSig: rcv.BadSig.Load()}
	done.LoneTrips, err = r.lone(ctx)
	if err != nil {
		return err
	}
	return e2e.Send(os.Stdout, e2e.Message{Done: &done})
}
