package pgxoutbox_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// sparePort returns a loopback port nothing listens on at the moment.
func sparePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// server is a database server process of a test's own: started, restarted and stopped by its pid,
// never by name.
type server struct {
	t      testing.TB
	name   string
	port   int
	argv   []string
	cred   *syscall.Credential // run as this user (PostgreSQL refuses root)
	cmd    *exec.Cmd
	exited chan struct{}
	ready  func(ctx context.Context) error
}

// start runs the server and waits (at most 30s) until ready answers.
func (s *server) start() {
	s.t.Helper()
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	out, err := os.Create(filepath.Join(s.t.TempDir(), s.name+".log"))
	require.NoError(s.t, err)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(s.t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = out.Close(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		select {
		case <-exited:
			log, _ := os.ReadFile(out.Name())
			s.t.Fatalf("%s (pid %d) exited during startup: %s", s.name, cmd.Process.Pid, log)
		default:
		}
		if err := s.ready(ctx); err == nil {
			return
		} else if ctx.Err() != nil {
			s.t.Fatalf("%s (pid %d) not ready within 30s: %v", s.name, cmd.Process.Pid, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// signal sends sig to the server's pid and waits (at most 30s) for it to exit.
func (s *server) signal(sig syscall.Signal) {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		s.t.Errorf("%s (pid %d) did not exit on %v: killed", s.name, s.cmd.Process.Pid, sig)
	}
	s.cmd = nil
}

// startRedisServer runs a redis-server of the test's own on a spare loopback port, with an
// append-only file synced at every write (what it acknowledged survives a SIGKILL). It is killed at
// the test's end.
func startRedisServer(t testing.TB) *server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		skipOutsideCI(t, "redis-server is not on PATH")
	}
	port, dir := sparePort(t), t.TempDir()
	s := &server{t: t, name: "redis-server", port: port, argv: []string{bin, "--port", strconv.Itoa(port),
		"--bind", "127.0.0.1", "--save", "", "--appendonly", "yes", "--appendfsync", "always", "--dir", dir,
		"--daemonize", "no"}}
	s.ready = func(ctx context.Context) error {
		c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
		defer c.Close()
		info, err := c.Info(ctx, "server").Result()
		if err == nil && !strings.Contains(info, "process_id:"+strconv.Itoa(s.cmd.Process.Pid)+"\r\n") {
			return errors.New("the port is served by another process")
		}
		if err != nil {
			return err
		}
		return c.Ping(ctx).Err()
	}
	s.start()
	t.Cleanup(func() { s.signal(syscall.SIGKILL) })
	return s
}

func (s *server) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// startPostgres runs a PostgreSQL cluster of the test's own (initdb in a temporary directory) on a
// spare loopback port, as the postgres user when the test runs as root. It is stopped (fast
// shutdown, by pid) and removed at the test's end. The binaries are WEBHOOKS_PG_BIN's, else the
// newest of /usr/lib/postgresql/*/bin.
func startPostgres(t testing.TB) *server {
	t.Helper()
	bin := os.Getenv("WEBHOOKS_PG_BIN")
	if bin == "" {
		found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
		if len(found) > 0 {
			bin = filepath.Dir(found[len(found)-1])
		}
	}
	if _, err := os.Stat(filepath.Join(bin, "initdb")); bin == "" || err != nil {
		skipOutsideCI(t, "no PostgreSQL binaries (initdb): set WEBHOOKS_PG_BIN")
	}
	dir, err := os.MkdirTemp("", "pgxoutbox-pg-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			skipOutsideCI(t, "running as root with no postgres user to run PostgreSQL as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		require.NoError(t, os.Chown(dir, uid, gid))
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
	if cred != nil {
		initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := initdb.CombinedOutput()
	require.NoError(t, err, "initdb: %s", out)
	port := sparePort(t)
	s := &server{t: t, name: "postgres", port: port, cred: cred, argv: []string{filepath.Join(bin, "postgres"),
		"-D", data, "-p", strconv.Itoa(port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir,
		"-c", "fsync=off", "-c", "shared_buffers=32MB", "-c", "max_connections=60"}}
	s.ready = func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, s.url())
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	}
	s.start()
	t.Cleanup(func() { s.signal(syscall.SIGINT) }) // fast shutdown
	return s
}

func (s *server) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", s.port)
}

// skipOutsideCI skips t, or fails it in CI, where everything must run.
func skipOutsideCI(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}
