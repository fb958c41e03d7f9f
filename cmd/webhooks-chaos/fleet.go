package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// producerProc is one producer slot: the process serving it now and what its incarnations reported.
type producerProc struct {
	proc        *child
	incarnation int
	done        bool // the current incarnation accepted every event
	maxProgress int  // the most events any incarnation reported accepted
	maxTaken    int  // (-fault skip-replay) the last event any incarnation took
}

// fleet runs the producer processes: it starts, SIGKILLs and restarts them, and reads their reports.
type fleet struct {
	cfg     config
	exe     string
	addr    string
	watch   *circuitWatch
	started time.Time

	mu         sync.Mutex
	procs      []producerProc
	kills      int
	retries    int64    // calls not accepted, summed over the incarnations that finished
	errorLines []string // the first "error" reports
	errorCount int
	failures   []error // producers that exited by themselves
}

func newFleet(cfg config, exe, addr string, watch *circuitWatch) *fleet {
	return &fleet{cfg: cfg, exe: exe, addr: addr, watch: watch, started: time.Now(), procs: make([]producerProc, cfg.producers)}
}

// start starts producer i's next incarnation, dispatching from event from on.
func (f *fleet) start(i, from int) error {
	f.mu.Lock()
	f.procs[i].incarnation++
	inc := f.procs[i].incarnation
	f.procs[i].done = false
	f.mu.Unlock()
	cmd := exec.Command(f.exe, "-role", "producer", "-redis", f.addr, "-index", strconv.Itoa(i),
		"-events", strconv.Itoa(f.cfg.events), "-from", strconv.Itoa(from), "-rate", strconv.Itoa(f.cfg.rate),
		"-senders", strconv.Itoa(f.cfg.senders), "-timeout", f.cfg.timeout.String(),
		"-break-after", strconv.Itoa(f.cfg.breakAfter), "-max-time", f.cfg.maxTime.String(), "-fault", f.cfg.fault)
	cmd.Stdout = &lineWriter{emit: func(line string) { f.handle(i, inc, strings.Fields(line)) }}
	cmd.Stderr = childStderr
	proc, err := startChild(fmt.Sprintf("producer %d", i), cmd, func(c *child) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.failures = append(f.failures, c.exitError())
	})
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.procs[i].proc = proc
	f.mu.Unlock()
	if f.cfg.verbose {
		fmt.Printf("chaos: %5.1fs producer %d started (pid %d, incarnation %d, from event %d)\n",
			time.Since(f.started).Seconds(), i, proc.pid(), inc, from)
	}
	return nil
}

// handle takes one report line of producer i's incarnation inc.
func (f *fleet) handle(i, inc int, fields []string) {
	if len(fields) == 0 {
		return
	}
	if fields[0] == "circuit-opened" || fields[0] == "circuit-closed" {
		if len(fields) >= 3 {
			ms, _ := strconv.ParseInt(fields[2], 10, 64)
			f.watch.hookReport(fields[0], fields[1], time.UnixMilli(ms))
		}
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &f.procs[i]
	current := inc == p.incarnation
	switch fields[0] {
	case "progress":
		if n, err := strconv.Atoi(fields[1%len(fields)]); err == nil && current {
			p.maxProgress = max(p.maxProgress, n)
		}
	case "taken":
		if n, err := strconv.Atoi(fields[1%len(fields)]); err == nil {
			p.maxTaken = max(p.maxTaken, n)
		}
	case "done":
		if current && len(fields) == 3 {
			p.done, p.maxProgress = true, f.cfg.events
			n, _ := strconv.ParseInt(fields[2], 10, 64)
			f.retries += n
		}
	case "error":
		f.errorCount++
		if len(f.errorLines) < 5 {
			f.errorLines = append(f.errorLines, fmt.Sprintf("producer %d: %s", i, strings.Join(fields[1:], " ")))
		}
	}
}

// progress is the share of all events accepted, counting each producer's best incarnation.
func (f *fleet) progress() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range f.procs {
		n += p.maxProgress
	}
	return float64(n) / float64(f.cfg.producers*f.cfg.events)
}

// allDone reports whether every producer's current incarnation has accepted all its events.
func (f *fleet) allDone() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !slices.ContainsFunc(f.procs, func(p producerProc) bool { return !p.done })
}

// failure is the first producer that exited by itself, if any.
func (f *fleet) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return errors.Join(f.failures...)
}

// killRestart SIGKILLs a random producer (one still accepting, if any; before is told which, just before)
// and starts it again: from its first event, or (-fault skip-replay) after the last event it took,
// accepted or not.
func (f *fleet) killRestart(rng *rand.Rand, before func(i int)) error {
	f.mu.Lock()
	var candidates []int
	for i, p := range f.procs {
		if !p.done {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 {
		candidates = []int{rng.IntN(len(f.procs))}
	}
	i := candidates[rng.IntN(len(candidates))]
	proc := f.procs[i].proc
	f.mu.Unlock()
	before(i)
	if err := proc.kill(); err != nil {
		return err
	}
	from := 0
	f.mu.Lock()
	f.kills++
	if f.cfg.fault == "skip-replay" {
		from = min(f.procs[i].maxTaken+1, f.cfg.events)
	}
	f.mu.Unlock()
	if f.cfg.verbose {
		fmt.Printf("chaos: %5.1fs producer %d SIGKILLed (pid %d)\n", time.Since(f.started).Seconds(), i, proc.pid())
	}
	return f.start(i, from)
}

// stopAll stops every producer (SIGTERM, SIGKILL after grace), all at once.
func (f *fleet) stopAll(grace time.Duration) {
	f.mu.Lock()
	procs := make([]*child, 0, len(f.procs))
	for _, p := range f.procs {
		if p.proc != nil {
			procs = append(procs, p.proc)
		}
	}
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range procs {
		wg.Go(func() { _ = c.stop(grace) })
	}
	wg.Wait()
}
