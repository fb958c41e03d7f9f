package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/smartdrop/webhooks/cmd/webhooks-bench/internal/e2e"
)

// childProc is one child program running one row of one run.
type childProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr bytes.Buffer
}

// runChild measures a row in a child process (bin, see ./child) under the key prefix of letter. The
// parent takes the Redis server's counters around each phase; the child reports its own figures,
// its CPU time included (its receiver's too: the receiver runs in the child).
func runChild(bin, letter string) func(ctx context.Context, e *env, run int, _ *http.Client) (result, error) {
	return func(ctx context.Context, e *env, run int, _ *http.Client) (result, error) {
		cfg := e.cfg
		prefix := fmt.Sprintf("%s%d%s", e.prefix, run, letter)
		pattern := "{" + prefix + ":*"
		defer e.cleanup(pattern)
		res := result{events: cfg.events, pairs: cfg.events * cfg.webhooks}
		cctx, cancel := context.WithTimeout(ctx, 4*cfg.phaseTimeout)
		defer cancel()
		p, err := startChild(cctx, bin, cfg, prefix, e.warmups())
		if err != nil {
			return res, err
		}
		defer p.stop()
		label := fmt.Sprintf("run %d/%d %s child", run, cfg.runs, filepath.Base(bin))
		if res.fresh, err = p.phase(ctx, e, label+" fresh"); err != nil {
			return res, p.explain(err)
		}
		res.deferred = res.fresh.deferred
		if err := e.afterFresh(ctx, &res, pattern, prefix, (cfg.events+e.warmups())*cfg.webhooks); err != nil {
			return res, err
		}
		if res.dup, err = p.phase(ctx, e, label+" duplicates"); err != nil {
			return res, p.explain(err)
		}
		m, err := e2e.Next(p.out)
		if err != nil || m.Done == nil {
			return res, p.explain(fmt.Errorf("no final message: %v", err))
		}
		res.loneTrips = m.Done.LoneTrips
		e.childSampled.Add(m.Done.Sampled)
		e.childBadSig.Add(m.Done.BadSig)
		return res, nil
	}
}

func startChild(ctx context.Context, bin string, cfg config, prefix string, warmup int) (*childProc, error) {
	p := &childProc{cmd: exec.CommandContext(ctx, bin, "-redis", cfg.redisAddr, "-prefix", prefix,
		"-events", strconv.Itoa(cfg.events), "-webhooks", strconv.Itoa(cfg.webhooks),
		"-payload", strconv.Itoa(cfg.payload), "-concurrency", strconv.Itoa(cfg.concurrency),
		"-redis-pool", strconv.Itoa(cfg.pool), "-warmup", strconv.Itoa(warmup),
		"-retention", cfg.retention.String(), "-phase-timeout", cfg.phaseTimeout.String())}
	p.cmd.Stderr = &p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = bufio.NewScanner(out)
	p.out.Buffer(make([]byte, 64<<10), 1<<20)
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// phase waits until the child is ready, takes the counters, lets it run the phase and takes them
// again.
func (p *childProc) phase(ctx context.Context, e *env, label string) (phaseOut, error) {
	m, err := e2e.Next(p.out)
	if err != nil {
		return phaseOut{}, err
	}
	if m.Ready == "" {
		return phaseOut{}, fmt.Errorf("child not ready: %+v", m)
	}
	var rep *e2e.PhaseReport
	out, err := e.phase(ctx, label, nil, 0, func(ctx context.Context, _ *atomic.Int64) (int, int, error) {
		if _, err := io.WriteString(p.in, "go\n"); err != nil {
			return 0, 0, err
		}
		m, err := e2e.Next(p.out)
		if err != nil {
			return 0, 0, err
		}
		if rep = m.Report; rep == nil {
			return 0, 0, fmt.Errorf("no report: %+v", m)
		}
		var repErr error
		if rep.Err != "" {
			repErr = fmt.Errorf("child: %s", rep.Err)
		}
		return rep.OK, rep.Failed, repErr
	})
	if rep != nil {
		// The child's own clock and counters: its phase without the pipe's latency.
		out.elapsed = time.Duration(rep.ElapsedNS)
		out.received, out.cmds, out.trips = rep.Received, rep.Cmds, rep.Trips
		out.childSec, out.deferred = time.Duration(rep.CPUNS).Seconds(), rep.Deferred
	}
	return out, err
}

func (p *childProc) explain(err error) error {
	if s := p.stderr.String(); s != "" {
		return fmt.Errorf("%w (child's stderr: %.2000s)", err, s)
	}
	return err
}

func (p *childProc) stop() {
	_ = p.in.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill() // our own child, by its handle
		<-done
	}
}
