package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/cmd/webhooks-bench/internal/e2e"
)

// newClient is the Redis client of one system, with a counting hook.
func newClient(cfg config) (*redis.Client, *e2e.Counter) {
	return e2e.NewClient(cfg.redisAddr, cfg.pool)
}

// snapshot is the Redis server's counters at one moment.
type snapshot struct {
	at         time.Time
	usedMemory int64
	cmds       map[string]int64 // commandstats calls by command, INFO excluded (ours)
	cpu        float64          // used_cpu_user + used_cpu_sys (s)
	selfCPU    time.Duration    // this process's CPU time
}

func takeSnapshot(ctx context.Context, admin *redis.Client) (snapshot, error) {
	s := snapshot{at: time.Now(), cmds: map[string]int64{}, selfCPU: e2e.ProcessCPU()}
	raw, err := admin.Info(ctx, "memory", "commandstats", "cpu").Result()
	if err != nil {
		return s, fmt.Errorf("INFO: %w", err)
	}
	for line := range strings.SplitSeq(raw, "\n") {
		line = strings.TrimSpace(line)
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case k == "used_memory":
			s.usedMemory, _ = strconv.ParseInt(v, 10, 64)
		case k == "used_cpu_user" || k == "used_cpu_sys":
			f, _ := strconv.ParseFloat(v, 64)
			s.cpu += f
		case strings.HasPrefix(k, "cmdstat_"):
			name := strings.TrimPrefix(k, "cmdstat_")
			if name == "info" {
				continue
			}
			calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
			n, _ := strconv.ParseInt(calls, 10, 64)
			s.cmds[name] = n
		}
	}
	return s, nil
}

// delta is what happened between two snapshots.
type delta struct {
	dur      time.Duration
	memory   int64
	cmds     int64
	byCmd    map[string]int64
	redisCPU float64 // cores used by Redis over the interval
	selfCPU  float64 // cores used by this process (bench + receiver + system under test)
	// CPU seconds over the interval
	redisSec, selfSec float64
}

func diff(a, b snapshot) delta {
	d := delta{dur: b.at.Sub(a.at), memory: b.usedMemory - a.usedMemory, byCmd: map[string]int64{}}
	for k, v := range b.cmds {
		if n := v - a.cmds[k]; n > 0 {
			d.byCmd[k] = n
			d.cmds += n
		}
	}
	d.redisSec, d.selfSec = b.cpu-a.cpu, (b.selfCPU - a.selfCPU).Seconds()
	if s := d.dur.Seconds(); s > 0 {
		d.redisCPU, d.selfCPU = d.redisSec/s, d.selfSec/s
	}
	return d
}

// backgroundRate is the rate of commands other clients send to the shared Redis, measured over an idle
// interval before a run: it inflates the commands-per-delivery figures by rate × phase / deliveries.
func backgroundRate(ctx context.Context, admin *redis.Client, over time.Duration) (float64, error) {
	a, err := takeSnapshot(ctx, admin)
	if err != nil {
		return 0, err
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(over):
	}
	b, err := takeSnapshot(ctx, admin)
	if err != nil {
		return 0, err
	}
	d := diff(a, b)
	return float64(d.cmds) / d.dur.Seconds(), nil
}

// deleteKeys unlinks every key matching pattern, with SCAN (bounded: at most 100,000 SCAN calls).
func deleteKeys(ctx context.Context, admin *redis.Client, pattern string) (int, error) {
	var cursor uint64
	deleted := 0
	for range 100_000 {
		keys, next, err := admin.Scan(ctx, cursor, pattern, 2000).Result()
		if err != nil {
			return deleted, err
		}
		if len(keys) > 0 {
			if err := admin.Unlink(ctx, keys...).Err(); err != nil {
				return deleted, err
			}
			deleted += len(keys)
		}
		if cursor = next; cursor == 0 {
			return deleted, nil
		}
	}
	return deleted, errors.New("SCAN did not finish")
}

// memoryUsage sums MEMORY USAGE (all samples) over the keys matching pattern: a cross-check of the
// used_memory delta that other clients of a shared Redis cannot disturb (it leaves out the expires
// table and the main table's growth). It also returns the sums by kind of key (keyKind) and the
// number of keys.
func memoryUsage(ctx context.Context, admin *redis.Client, pattern, prefix string) (int64, map[string]int64, int, error) {
	var cursor uint64
	var total int64
	byKind := map[string]int64{}
	n := 0
	for range 100_000 {
		keys, next, err := admin.Scan(ctx, cursor, pattern, 2000).Result()
		if err != nil {
			return total, byKind, n, err
		}
		if len(keys) > 0 {
			pipe := admin.Pipeline()
			cmds := make([]*redis.IntCmd, len(keys))
			for i, k := range keys {
				cmds[i] = pipe.MemoryUsage(ctx, k, 0)
			}
			if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				return total, byKind, n, err
			}
			for i, c := range cmds {
				total += c.Val()
				byKind[keyKind(keys[i], prefix)] += c.Val()
			}
			n += len(keys)
		}
		if cursor = next; cursor == 0 {
			return total, byKind, n, nil
		}
	}
	return total, byKind, n, errors.New("SCAN did not finish")
}

// keyKind is the first segment of a key after its prefix (and hash tag): "{p:3}:rec:…" is rec,
// "p:claim:…" is claim.
func keyKind(key, prefix string) string {
	rest := key
	if i := strings.Index(rest, "}:"); i >= 0 {
		rest = rest[i+2:]
	} else {
		rest = strings.TrimPrefix(rest, prefix+":")
	}
	kind, _, _ := strings.Cut(rest, ":")
	return kind
}

// redisFacts describes the server.
type redisFacts struct{ version, mode string }

func serverInfo(ctx context.Context, admin *redis.Client) (redisFacts, error) {
	raw, err := admin.Info(ctx, "server").Result()
	if err != nil {
		return redisFacts{}, err
	}
	var f redisFacts
	for line := range strings.SplitSeq(raw, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "redis_version":
			f.version = v
		case "redis_mode":
			f.mode = v
		}
	}
	return f, nil
}

// progress is the progress line on stderr.
type progress struct {
	w       io.Writer
	mu      sync.Mutex
	label   string
	done    *atomic.Int64
	total   int64
	stopped chan struct{}
	once    sync.Once
	quit    chan struct{}
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, stopped: make(chan struct{}), quit: make(chan struct{})}
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				fmt.Fprintf(p.w, "\r%-78s\r", "")
				return
			case <-t.C:
				p.mu.Lock()
				line := p.label
				if p.done != nil && p.total > 0 {
					line += fmt.Sprintf(" %d/%d", p.done.Load(), p.total)
				}
				p.mu.Unlock()
				if len(line) > 78 {
					line = line[:78]
				}
				fmt.Fprintf(p.w, "\r%-78s", line)
			}
		}
	}()
	return p
}

func (p *progress) set(label string, done *atomic.Int64, total int) {
	p.mu.Lock()
	p.label, p.done, p.total = label, done, int64(total)
	p.mu.Unlock()
}

func (p *progress) stop() {
	p.once.Do(func() { close(p.quit) })
	<-p.stopped
}

// topCommands formats counts per delivery, largest first.
func topCommands(byCmd map[string]int64, deliveries int, n int) string {
	type kv struct {
		k string
		v int64
	}
	var all []kv
	for k, v := range byCmd {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || all[i].v == all[j].v && all[i].k < all[j].k })
	var parts []string
	for i, e := range all {
		if float64(e.v)/float64(deliveries) < 0.005 {
			break // a handful of connection handshakes and the like
		}
		if i == n {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", strings.ToUpper(e.k), float64(e.v)/float64(deliveries)))
	}
	return strings.Join(parts, ", ")
}
