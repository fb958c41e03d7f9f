package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// child is one process the soak started: only its pid is ever signalled, and only until it has been
// reaped (os.Process refuses to signal a waited-for process, so a recycled pid is never hit).
type child struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been reaped
	err    error         // Wait's error, set before exited is closed

	mu       sync.Mutex
	intended bool // the soak signalled it: its exit is expected
}

// startChild starts cmd; onExit, if set, is called (on its own goroutine) when the process exits
// without the soak having signalled it.
func startChild(name string, cmd *exec.Cmd, onExit func(c *child)) (*child, error) {
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
		if onExit != nil && !c.wasIntended() {
			onExit(c)
		}
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) wasIntended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.intended
}

func (c *child) alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to the child unless it has already exited, marking its exit as expected.
func (c *child) signal(sig syscall.Signal) {
	c.mu.Lock()
	c.intended = true
	c.mu.Unlock()
	if c.alive() {
		_ = c.cmd.Process.Signal(sig) // "process already finished" is the only error once started
	}
}

// kill SIGKILLs the child and waits (at most 10 s) until it is reaped.
func (c *child) kill() error {
	c.signal(syscall.SIGKILL)
	select {
	case <-c.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) not reaped 10 s after SIGKILL", c.name, c.pid())
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs.
func (c *child) stop(grace time.Duration) error {
	if !c.alive() {
		return nil
	}
	c.signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		return nil
	case <-time.After(grace):
		return c.kill()
	}
}

// exitError describes how a child ended by itself.
func (c *child) exitError() error {
	if c.err == nil {
		return fmt.Errorf("%s (pid %d) exited early with status 0", c.name, c.pid())
	}
	return fmt.Errorf("%s (pid %d) exited early: %w", c.name, c.pid(), c.err)
}

// lineWriter is a child's stdout: it hands each complete line to emit.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	emit func(line string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 1<<16 {
		return len(p), errors.New("line too long")
	}
	return len(p), nil
}

// childStderr is where children's stderr goes: the soak's own.
var childStderr = os.Stderr
