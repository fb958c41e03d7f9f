package webhooks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/worker"
)

// The cost of an idle worker, counted by the server: the commands a set of clients sent it, those its
// scripts ran included. On miniredis it is the server's own count (each test has its own server: the
// clients counted are all it has). On a real Redis or a cluster's masters, which other tests and
// programs share, INFO commandstats counts everyone's commands, so the commands are read off MONITOR,
// each attributed to the connection that sent it by its address (a script's commands to the script's
// caller); the clients counted record the address of every connection they dial, and when it was open
// (watchedClient): once one closes, its port may serve another program's connection (Linux reuses a
// loopback port at once), whose commands are not the client's.

// commandWatch counts what its clients send a test's Redis.
type commandWatch struct {
	tr *testRedis

	mu     sync.Mutex
	conns  map[string][]watchedConn // by connKey: the watched connections that had that address
	lines  []monitorLine            // what MONITOR showed of the watched connections
	marks  map[string]bool          // marker lines seen (flush)
	stop   []func()
	wg     sync.WaitGroup
	nodes  []string // the nodes MONITOR watches
	client map[string]redis.UniversalClient
}

// watchedConn is a watched connection: its client's name, and when it was open (Unix seconds; to is
// 0 while it is).
type watchedConn struct {
	client   string
	from, to float64
}

// connKey names a connection as MONITOR shows it: its local address, and the node's port (the tests'
// nodes are all on this machine, each on a port of its own).
func connKey(local, node string) string {
	_, port, _ := net.SplitHostPort(node)
	return local + ">" + port
}

// clientAt is the watched client whose connection from src to node was open at at ("" if none).
// Caller holds w.mu.
func (w *commandWatch) clientAt(src, node string, at float64) string {
	for _, c := range w.conns[connKey(src, node)] {
		if c.from <= at && (c.to == 0 || at <= c.to) {
			return c.client
		}
	}
	return ""
}

// unixNow is the time now in Unix seconds, as MONITOR stamps a command (the same clock: one machine).
func unixNow() float64 { return float64(time.Now().UnixMicro()) / 1e6 }

// monitorLine is a command MONITOR showed: when the server ran it, and the watched client it was of.
type monitorLine struct {
	at     float64 // Unix seconds, the server's clock
	client string
	cmd    string // its first 80 bytes, for the log
}

// newCommandWatch starts watching the test's Redis (MONITOR on every node of a real one).
func newCommandWatch(t *testing.T, tr *testRedis) *commandWatch {
	t.Helper()
	w := &commandWatch{tr: tr, conns: map[string][]watchedConn{}, marks: map[string]bool{}, client: map[string]redis.UniversalClient{}}
	if tr.mini != nil {
		return w
	}
	switch c := tr.rdb.(type) {
	case *redis.ClusterClient:
		require.NoError(t, c.ForEachMaster(context.Background(), func(_ context.Context, n *redis.Client) error {
			w.mu.Lock()
			w.nodes = append(w.nodes, n.Options().Addr)
			w.mu.Unlock()
			return nil
		}))
	case *redis.Client:
		w.nodes = []string{c.Options().Addr}
	}
	for _, addr := range w.nodes {
		w.monitor(t, addr)
	}
	t.Cleanup(func() {
		for _, f := range w.stop {
			f()
		}
		w.wg.Wait()
	})
	return w
}

// monitor reads MONITOR of the node at addr until the test ends.
func (w *commandWatch) monitor(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	_, err = conn.Write([]byte("MONITOR\r\n"))
	require.NoError(t, err)
	rd := bufio.NewReaderSize(conn, 1<<16)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", line, "MONITOR on %s", addr)
	w.stop = append(w.stop, func() { _ = conn.Close() })
	w.wg.Go(func() {
		caller := "" // the client of the last command not run by a script
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			caller = w.take(addr, line, caller)
		}
	})
}

// take records a line MONITOR showed on node: a watched client's command, charged to the client whose
// connection sent it (a script's commands to its caller: caller, the client of the last command not
// run by a script), or a marker (flush). It returns the caller for the next line.
func (w *commandWatch) take(node, line, caller string) string {
	// +1700000000.123456 [0 127.0.0.1:50000] "ZRANGE" "key" ...
	ts, rest, ok := strings.Cut(strings.TrimPrefix(line, "+"), " [")
	if !ok {
		return caller
	}
	src, cmd, _ := strings.Cut(strings.TrimRight(rest, "\r\n"), "] ")
	_, src, _ = strings.Cut(src, " ")
	at, _ := strconv.ParseFloat(ts, 64)
	w.mu.Lock()
	defer w.mu.Unlock()
	if src != "lua" {
		caller = w.clientAt(src, node, at)
	}
	if strings.HasPrefix(cmd, `"echo" "idle-watch-mark-`) || strings.HasPrefix(cmd, `"ECHO" "idle-watch-mark-`) {
		w.marks[node+" "+strings.Trim(strings.Fields(cmd)[1], `"`)] = true
	} else if caller != "" {
		w.lines = append(w.lines, monitorLine{at: at, client: caller, cmd: cmd[:min(len(cmd), 80)]})
	}
	return caller
}

// openConn records a connection of client name from local to node, open from from (Unix seconds);
// closeAt records when it closed.
func (w *commandWatch) openConn(local, node, name string, from float64) (closeAt func(to float64)) {
	key := connKey(local, node)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conns[key] = append(w.conns[key], watchedConn{client: name, from: from})
	i := len(w.conns[key]) - 1
	return func(to float64) {
		w.mu.Lock()
		w.conns[key][i].to = to
		w.mu.Unlock()
	}
}

// watchedClient is a new client on the test's Redis whose connections are counted under name.
func (w *commandWatch) watchedClient(t *testing.T, name string) redis.UniversalClient {
	t.Helper()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 5 * time.Minute}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		// Opened after the dial (its commands follow it), closed just before the close (go-redis sends
		// nothing on a connection it closes): another program's connection from the same port ran its
		// commands before the one or after the other.
		closeAt := w.openConn(conn.LocalAddr().String(), conn.RemoteAddr().String(), name, unixNow())
		return &closeNotingConn{Conn: conn, closed: func() { closeAt(unixNow()) }}, nil
	}
	c := w.tr.newClientDialing(t, dial)
	w.client[name] = c
	return c
}

// closeNotingConn is a connection that calls closed once, as it closes.
type closeNotingConn struct {
	net.Conn
	once   sync.Once
	closed func()
}

// Close calls closed (once), then closes the connection.
func (c *closeNotingConn) Close() error {
	c.once.Do(c.closed)
	return c.Conn.Close()
}

// SyscallConn is the connection's own: go-redis checks a pooled connection through it before reusing it.
func (c *closeNotingConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

// newClientDialing is a new client on the test's Redis, with its options, that dials with dial.
func (tr *testRedis) newClientDialing(t testing.TB, dial func(ctx context.Context, network, addr string) (net.Conn, error)) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	switch src := tr.rdb.(type) {
	case *redis.ClusterClient:
		o := *src.Options()
		o.Dialer = dial
		c = redis.NewClusterClient(&o)
	default:
		o := *tr.rdb.(*redis.Client).Options()
		o.Dialer = dial
		c = redis.NewClient(&o)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// count is how many commands the watched clients made the server run from now until done is called:
// in all, and per client on a real Redis (nil on miniredis, whose count is every client's: only the
// watched ones may use it meanwhile); and every client's, by INFO commandstats on a real Redis (less
// the INFO that read the first figure), by its own count on miniredis.
func (w *commandWatch) count(t *testing.T) (done func() (total int, per map[string]int, everyone int64, cmds []string)) {
	t.Helper()
	if w.tr.mini != nil {
		before := w.tr.mini.CommandCount()
		return func() (int, map[string]int, int64, []string) {
			n := w.tr.mini.CommandCount() - before
			return n, nil, int64(n), nil
		}
	}
	statsBefore := w.allCommands(t)
	from := unixNow()
	return func() (int, map[string]int, int64, []string) {
		to := unixNow()
		everyone := w.allCommands(t) - statsBefore - int64(len(w.nodes)) // the INFO that read the first figure
		w.flush(t)
		w.mu.Lock()
		defer w.mu.Unlock()
		total, per, cmds := 0, map[string]int{}, []string(nil)
		for name := range w.client {
			per[name] = 0
		}
		for _, l := range w.lines {
			if l.at >= from && l.at <= to {
				per[l.client]++
				total++
				cmds = append(cmds, fmt.Sprintf("%.3f %s %s", l.at-from, l.client, l.cmd))
			}
		}
		return total, per, everyone, cmds
	}
}

// flush waits until MONITOR has shown every command run before it: a marker sent to each node after
// them has been seen.
func (w *commandWatch) flush(t *testing.T) {
	t.Helper()
	mark := "idle-watch-mark-" + randomHex(4)
	for _, addr := range w.nodes {
		c := redis.NewClient(&redis.Options{Addr: addr})
		require.NoError(t, c.Echo(context.Background(), mark).Err())
		_ = c.Close()
		eventually(t, 10*time.Second, func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.marks[addr+" "+mark]
		}, "MONITOR shows the marker")
	}
}

// allCommands is the sum of the calls of INFO commandstats over the nodes (every client's).
func (w *commandWatch) allCommands(t *testing.T) int64 {
	t.Helper()
	var n int64
	for _, addr := range w.nodes {
		c := redis.NewClient(&redis.Options{Addr: addr})
		info, err := c.Info(context.Background(), "commandstats").Result()
		_ = c.Close()
		require.NoError(t, err)
		for _, line := range strings.Split(info, "\n") {
			if _, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls="); ok {
				calls, _, _ := strings.Cut(rest, ",")
				v, _ := strconv.ParseInt(calls, 10, 64)
				n += v
			}
		}
	}
	return n
}

// idleWindow is how long TestIdleWorkerCostIsBounded counts an idle worker's commands: two and a half
// sweeps, and a third of the subscription's ping period.
const idleWindow = 10 * time.Second

// TestIdleWorkerCostIsBounded: idle workers (Run with one webhook registered and nothing due) make
// Redis run at most 1 command per second each, counted by the server (scripts' commands included)
// over a quiet 10 s: 1 and 3 replicas on the default 64 shards, and 1 on 16 and 256 (the cost does not
// grow with the shard count). With nothing to read, all a worker sends is its sweep (worker.SweepEvery)
// and, when quiet for worker.PingEvery, a ping of its subscription.
//
// On a real Redis or a cluster, not parallel with the package's other tests: they load the server it
// counts on (on CI's cluster, beside them, a replica made 13 commands in 10 s once; alone it makes 4),
// and the figure is an idle worker's on a quiet server. On miniredis each case counts a server of its
// own, which nothing else uses, so it runs beside the others. Its four cases run together.
func TestIdleWorkerCostIsBounded(t *testing.T) {
	if onMiniredis() {
		t.Parallel()
	}
	for _, c := range []struct{ replicas, shards int }{{1, 64}, {3, 64}, {1, 16}, {1, 256}} {
		t.Run(fmt.Sprintf("%d_replicas_%d_shards", c.replicas, c.shards), func(t *testing.T) {
			t.Parallel()
			tr := newTestRedis(t)
			watch := newCommandWatch(t, tr)
			var ds []*Dispatcher
			for i := range c.replicas {
				ds = append(ds, newTestDispatcherOn(t, watch.watchedClient(t, fmt.Sprintf("replica-%d", i)), tr, Options{Shards: c.shards}))
			}
			mustCreate(t, ds[0], newReceiver(t), "idle.*")
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			var idled sync.WaitGroup
			for _, d := range ds {
				idled.Add(1)
				var once sync.Once
				wg.Go(func() {
					_ = runWorker(ctx, d, worker.Hooks{Idled: func() { once.Do(idled.Done) }})
				})
			}
			waited := make(chan struct{})
			go func() { idled.Wait(); close(waited) }()
			select { // the first, full scan ends before each worker first sleeps
			case <-waited:
			case <-time.After(30 * time.Second):
				t.Fatal("the workers never idled")
			}
			done := watch.count(t)
			start := time.Now()
			time.Sleep(idleWindow)
			total, per, everyone, cmds := done()
			took := time.Since(start)
			perReplica := float64(total) / float64(c.replicas) / took.Seconds()
			t.Logf("%d idle replicas, %d shards: %d commands in %s, %.2f commands/s per replica (%v); INFO commandstats, every client of the server: %d",
				c.replicas, c.shards, total, took.Round(time.Millisecond), perReplica, per, everyone)
			if perReplica > 1 {
				t.Logf("the commands (s after the count began, client, command):\n%s", strings.Join(cmds, "\n"))
			}
			assert.LessOrEqual(t, perReplica, 1.0, "commands/s per idle replica")
			for name, n := range per {
				assert.LessOrEqual(t, float64(n)/took.Seconds(), 1.0, "commands/s of %s", name)
			}
			assert.Positive(t, total, "the sweep reads: the count sees the workers")
		})
	}
}

// percentile is the p-th percentile (0-100) of ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	k := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// TestCommandWatchChargesOpenConnectionsOnly: a MONITOR line is charged to a watched client only when
// it came from the client's connection while that was open, and a script's commands to the script's
// caller. Once a connection has closed, another program's connection from the same local port (Linux
// reuses a loopback port at once) is not the client's: CI met it, a replica of
// TestIdleWorkerCostIsBounded charged with another package's tests.
func TestCommandWatchChargesOpenConnectionsOnly(t *testing.T) {
	t.Parallel()
	w := &commandWatch{conns: map[string][]watchedConn{}, marks: map[string]bool{}}
	const node, local = "127.0.0.1:7000", "127.0.0.1:50000"
	line := func(at float64, src, cmd string) string { return fmt.Sprintf("+%.6f [0 %s] %s\r\n", at, src, cmd) }
	closeAt := w.openConn(local, node, "watched", 100)
	caller := ""
	for _, l := range []string{
		line(99.9, local, `"PING" "before"`),                  // before the dial: another program's
		line(100.1, local, `"EVALSHA" "sha" "0"`),             // the client's
		line(100.1, "lua", `"GET" "in-script"`),               // its script's
		line(100.2, "127.0.0.1:50001", `"PING" "other-port"`), // another connection
		line(100.2, "lua", `"GET" "other-script"`),            // its script's
		line(100.3, local, `"PING" "open"`),                   // the client's
	} {
		caller = w.take(node, l, caller)
	}
	closeAt(101)
	for _, l := range []string{
		line(101.1, local, `"PING" "after-close"`), // the port reused by another program
		line(101.1, "lua", `"GET" "after-close"`),
	} {
		caller = w.take(node, l, caller)
	}
	w.openConn(local, node, "again", 102) // a watched client dials from the port again
	for _, l := range []string{line(102.1, local, `"PING" "again"`), "+OK\r\n"} {
		caller = w.take(node, l, caller)
	}
	var got []string
	for _, l := range w.lines {
		got = append(got, l.client+" "+l.cmd)
	}
	assert.Equal(t, []string{`watched "EVALSHA" "sha" "0"`, `watched "GET" "in-script"`, `watched "PING" "open"`,
		`again "PING" "again"`}, got)
	require.Equal(t, "watched", w.clientAt(local, node, 100.5))
	require.Empty(t, w.clientAt(local, "127.0.0.1:7001", 100.5), "the same port to another node")
}
