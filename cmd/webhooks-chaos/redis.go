package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is the soak's own redis-server: one port and one AOF directory for its whole life,
// whatever process serves them at the moment.
type redisServer struct {
	bin      string
	port     int
	dir      string
	logFile  string
	proc     *child
	restarts int
	onExit   func(*child)
}

// addr is the server's loopback address.
func (s *redisServer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// startRedis starts a redis-server with AOF in dir on a spare loopback port, trying up to 3 ports.
func startRedis(ctx context.Context, bin, dir string, onExit func(*child)) (*redisServer, error) {
	var errs []error
	for range 3 {
		port, err := sparePort()
		if err != nil {
			return nil, err
		}
		s := &redisServer{bin: bin, port: port, dir: filepath.Join(dir, "redis"), logFile: filepath.Join(dir, "redis.log"), onExit: onExit}
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return nil, err
		}
		if err := s.start(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		return s, nil
	}
	return nil, fmt.Errorf("could not start redis-server: %w", errors.Join(errs...))
}

// sparePort returns a loopback port nothing listens on at the moment.
func sparePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a spare port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start runs redis-server on s.port and s.dir (loading the AOF there) and waits until that very
// process answers PING.
func (s *redisServer) start(ctx context.Context) error {
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--daemonize", "no",
		"--dir", s.dir, "--logfile", s.logFile, "--save", "", "--appendonly", "yes", "--appendfsync", "always")
	cmd.Stdout, cmd.Stderr = childStderr, childStderr
	proc, err := startChild("redis-server", cmd, s.onExit)
	if err != nil {
		return err
	}
	s.proc = proc
	if err := waitRedis(ctx, s.addr(), proc); err != nil {
		_ = proc.kill()
		return fmt.Errorf("redis-server on port %d: %w (log: %s)", s.port, err, s.logTail())
	}
	return nil
}

// waitRedis waits (at most 20 s) until proc answers PING on addr: a server that is still loading
// its AOF or another process on the port does not count.
func waitRedis(ctx context.Context, addr string, proc *child) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1})
	defer rdb.Close()
	want := "process_id:" + strconv.Itoa(proc.pid())
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if !proc.alive() {
			return errors.New("exited during startup")
		}
		info, err := rdb.Info(ctx, "server").Result()
		if err == nil && !strings.Contains(info, want+"\r\n") {
			return errors.New("the port is served by another process")
		}
		if err == nil && rdb.Ping(ctx).Err() == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("no PING answer within 20 s")
}

// killRestart SIGKILLs the server, leaves it down for down, and restarts it on the same port and AOF.
func (s *redisServer) killRestart(ctx context.Context, down time.Duration) error {
	if err := s.proc.kill(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	if err := s.start(ctx); err != nil {
		return fmt.Errorf("restart after SIGKILL: %w", err)
	}
	s.restarts++
	return nil
}

// stop ends the current server process (SIGTERM, then SIGKILL after 10 s).
func (s *redisServer) stop() error {
	if s == nil || s.proc == nil {
		return nil
	}
	return s.proc.stop(10 * time.Second)
}

// logTail is the end of the server's log, for error messages.
func (s *redisServer) logTail() string {
	b, err := os.ReadFile(s.logFile)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], " | ")
}
