package main

// The harness of the tests that run webhooksd as a process: the binary (built once per test run), a
// redis-server of the tests' own (started once, on a spare loopback port, stopped by its pid), the
// server processes (started and signalled by their pid), a loopback receiver, and waits bounded by
// progress.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/internal/testmain"
)

var (
	tmpDir    string // removed by TestMain
	buildOnce sync.Once
	binPath   string
	buildErr  error

	redisOnce sync.Once
	redisAddr string
	redisErr  error
	redisCmd  *exec.Cmd     // the tests' own redis-server, once started
	redisGone chan struct{} // closed once it exited
)

func TestMain(m *testing.M) {
	var err error
	if tmpDir, err = os.MkdirTemp("", "webhooksd-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if redisCmd != nil {
		_ = redisCmd.Process.Signal(syscall.SIGKILL) // by its pid: the tests' own redis-server
		<-redisGone                                  // its Wait is startRedis's goroutine's
	}
	_ = os.RemoveAll(tmpDir)
	testmain.Exit(code)
}

// skipOutsideCI skips t, or fails it under CI, where everything must run.
func skipOutsideCI(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// binary is the webhooksd binary, built from this module once per test run.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binPath = filepath.Join(tmpDir, "webhooksd")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %w: %s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

// realRedis is the address of the tests' own redis-server (WEBHOOKS_REDIS_SERVER names the binary,
// else redis-server on PATH), started once with no persistence on a spare loopback port.
func realRedis(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("WEBHOOKS_REDIS_SERVER")
	if bin == "" {
		bin, _ = exec.LookPath("redis-server")
	}
	if bin == "" {
		skipOutsideCI(t, "no redis-server: set WEBHOOKS_REDIS_SERVER or put redis-server on PATH")
	}
	redisOnce.Do(func() { redisAddr, redisErr = startRedis(bin) })
	require.NoError(t, redisErr)
	return redisAddr
}

func startRedis(bin string) (string, error) {
	for range 5 { // a spare port may be taken between the check and the bind: try another
		port := sparePort()
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--daemonize", "no", "--dir", tmpDir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			return "", err
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		for i := 0; i < 200; i++ {
			select {
			case <-exited:
				i = 200
				continue
			default:
			}
			info, err := c.Info(context.Background(), "server").Result()
			if err == nil && strings.Contains(info, "process_id:"+strconv.Itoa(cmd.Process.Pid)+"\r\n") {
				_ = c.Close()
				redisCmd, redisGone = cmd, exited
				return addr, nil
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = c.Close()
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
	return "", errors.New("redis-server did not start on a spare port in 5 tries")
}

func sparePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// testKey is the operator key of the tests' servers.
const testKey = "test-operator-key-0123456789"

// proc is a webhooksd process of a test's own.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	exited chan struct{}
	code   int // its exit code, once exited
	addr   string
	mu     sync.Mutex
	lines  []string // its log, line by line
}

// startServer runs webhooksd with args (the environment of the test, plus env), waits for it to serve,
// and stops it (SIGKILL, by its pid) at the test's end if it still runs.
func startServer(t testing.TB, args []string, env ...string) *proc {
	t.Helper()
	p := launch(t, args, env...)
	p.waitServing()
	return p
}

// launch starts webhooksd without waiting for it.
func launch(t testing.TB, args []string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &proc{t: t, cmd: cmd, exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
		err := cmd.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			p.code = exit.ExitCode()
		}
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.exited
		}
		if t.Failed() {
			t.Logf("webhooksd pid %d log:\n%s", p.cmd.Process.Pid, strings.Join(p.log(), "\n"))
		}
	})
	return p
}

func (p *proc) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// logged is the first log line (decoded) whose msg starts with prefix.
func (p *proc) logged(prefix string) (map[string]any, bool) {
	for _, l := range p.log() {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			if msg, _ := m["msg"].(string); strings.HasPrefix(msg, prefix) {
				return m, true
			}
		}
	}
	return nil, false
}

// waitServing waits until the process logs its address, and then until /healthz answers.
func (p *proc) waitServing() {
	p.t.Helper()
	waitFor(p.t, "webhooksd serving", func() (bool, int64) {
		select {
		case <-p.exited:
			p.t.Fatalf("webhooksd exited (code %d) before serving:\n%s", p.code, strings.Join(p.log(), "\n"))
		default:
		}
		m, ok := p.logged("webhooksd: serving")
		if ok {
			p.addr, _ = m["addr"].(string)
		}
		return ok, int64(len(p.log()))
	})
	p.url("/healthz")
}

// url is the process's URL of path.
func (p *proc) url(path string) string { return "http://" + p.addr + path }

// signal sends sig to the process, by its pid.
func (p *proc) signal(sig syscall.Signal) { require.NoError(p.t, p.cmd.Process.Signal(sig)) }

// wait waits (at most a minute: a process that has not exited by then is killed and the test fails)
// for the process to exit and returns its exit code.
func (p *proc) wait() int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
		p.t.Fatalf("webhooksd pid %d did not exit within a minute: killed", p.cmd.Process.Pid)
	}
	return p.code
}

// stallLimit is how long a wait may see no progress before it fails.
const stallLimit = 60 * time.Second

// waitFor polls cond until it is done; it fails the test when cond's progress count has not moved
// for stallLimit (progress, not wall time, bounds the wait: a loaded machine is slow, not stuck).
func waitFor(t testing.TB, what string, cond func() (done bool, progress int64)) {
	t.Helper()
	last, lastAt := int64(-1), time.Now()
	for {
		done, progress := cond()
		if done {
			return
		}
		if progress != last {
			last, lastAt = progress, time.Now()
		} else if time.Since(lastAt) > stallLimit {
			t.Fatalf("%s: no progress for %s (at %d)", what, stallLimit, progress)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// api is an HTTP client of one server, keeping connections alive.
type api struct {
	t    testing.TB
	base func() string // the server's URL now (a restarted server may have another)
	key  string
	c    *http.Client
}

func newAPI(t testing.TB, base func() string, key string) *api {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
	t.Cleanup(tr.CloseIdleConnections)
	return &api{t: t, base: base, key: key, c: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// do sends a request with a JSON body (nil for none) and returns the status, body and headers; a
// transport error is returned, not fatal (a test may be killing the server).
func (a *api) do(method, path string, body any) (int, []byte, http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base()+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if a.key != "" {
		req.Header.Set("Authorization", "Bearer "+a.key)
	}
	resp, err := a.c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, resp.Header, err
}

// must is do that fails the test on a transport error or another status than want.
func (a *api) must(want int, method, path string, body any) []byte {
	a.t.Helper()
	status, out, _, err := a.do(method, path, body)
	require.NoError(a.t, err, "%s %s", method, path)
	require.Equal(a.t, want, status, "%s %s: %s", method, path, out)
	return out
}

// createWebhook registers a webhook through the admin API and returns its id and secret.
func (a *api) createWebhook(url string, events []string, tenant string) (id, secret string) {
	a.t.Helper()
	var w struct{ ID, Secret string }
	require.NoError(a.t, json.Unmarshal(a.must(201, "POST", "/webhooks",
		map[string]any{"url": url, "events": events, "tenant": tenant}), &w))
	return w.ID, w.Secret
}

// ingestAnswer is POST /v1/events's answer, as a client reads it.
type ingestAnswer struct {
	Events []struct {
		ID        string `json:"id"`
		Accepted  bool   `json:"accepted"`
		Duplicate bool   `json:"duplicate"`
		Webhooks  []struct {
			WebhookID  string `json:"webhook_id"`
			Accepted   bool   `json:"accepted"`
			DeliveryID string `json:"delivery_id"`
			Status     string `json:"status"`
			Duplicate  bool   `json:"duplicate"`
		} `json:"webhooks"`
	} `json:"events"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field"`
	} `json:"error"`
}

// receiver is a loopback webhook endpoint: each webhook posts to /w/<name>. It checks every
// request's signature with its webhook's secret, counts each (webhook, event) pair's receipts, and
// may hold each request for a while (delay) to keep attempts in flight. A request whose client went
// away before its answer was written is counted as cut short.
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	secrets map[string]string      // webhook name -> secret
	pairs   map[string][]time.Time // "name/event id" -> when each receipt began
	bad     []string               // signature failures
	delay   atomic.Pointer[func() time.Duration]
	started atomic.Int64
	done    atomic.Int64 // answered in full
	cut     atomic.Int64 // the client went away first
}

func newReceiver(t testing.TB) *receiver {
	rc := &receiver{secrets: map[string]string{}, pairs: map[string][]time.Time{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

// url is the endpoint of webhook name.
func (rc *receiver) url(name string) string { return rc.srv.URL + "/w/" + name }

func (rc *receiver) setSecret(name, secret string) {
	rc.mu.Lock()
	rc.secrets[name] = secret
	rc.mu.Unlock()
}

// holdFor makes every request wait f() before its answer.
func (rc *receiver) holdFor(f func() time.Duration) { rc.delay.Store(&f) }

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	began := time.Now()
	rc.started.Add(1)
	body, _ := io.ReadAll(r.Body)
	name := strings.TrimPrefix(r.URL.Path, "/w/")
	var evt struct{ ID string }
	_ = json.Unmarshal(body, &evt)
	rc.mu.Lock()
	secret := rc.secrets[name]
	rc.mu.Unlock()
	if err := webhooks.Verify(secret, r.Header, body); err != nil {
		rc.mu.Lock()
		rc.bad = append(rc.bad, name+"/"+evt.ID+": "+err.Error())
		rc.mu.Unlock()
	}
	if f := rc.delay.Load(); f != nil {
		select {
		case <-time.After((*f)()):
		case <-r.Context().Done():
			rc.cut.Add(1)
			return
		}
	}
	rc.mu.Lock()
	rc.pairs[name+"/"+evt.ID] = append(rc.pairs[name+"/"+evt.ID], began)
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
	if err := http.NewResponseController(w).Flush(); err != nil || r.Context().Err() != nil {
		rc.cut.Add(1)
		return
	}
	rc.done.Add(1)
}

// snapshot copies the pairs received so far.
func (rc *receiver) snapshot() map[string][]time.Time {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make(map[string][]time.Time, len(rc.pairs))
	for k, v := range rc.pairs {
		out[k] = append([]time.Time(nil), v...)
	}
	return out
}

// received is how many of the pairs have been received at least once.
func (rc *receiver) received(pairs []string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, p := range pairs {
		if len(rc.pairs[p]) > 0 {
			n++
		}
	}
	return n
}

func (rc *receiver) badSignatures() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.bad...)
}

// serverArgs are the flags of a test's server on the Redis at addr ("" for miniredis) under its own
// key prefix, plus extra.
func serverArgs(addr, prefix string, extra ...string) []string {
	args := []string{"-listen", "127.0.0.1:0", "-api-key", testKey, "-allow-private-networks", "-key-prefix", prefix,
		"-portal-key", strings.Repeat("p", 32), "-log-level", "info"}
	if addr != "" {
		args = append(args, "-redis", "redis://"+addr)
	}
	return append(args, extra...)
}
